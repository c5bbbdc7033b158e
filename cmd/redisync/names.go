package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/go-redisync/redisync/internal/layout"
)

// mutexChannelPrefix is the Mutex release channel's prefix (Redisson's).
const mutexChannelPrefix = layout.MutexChannelPrefix

// rwChannelPrefix is the RWMutex channel's prefix (Redisson's RReadWriteLock).
const rwChannelPrefix = layout.RWChannelPrefix

// auxName returns the auxiliary key or channel with prefix for the lock name.
func auxName(prefix, name string) string { return layout.Aux(prefix, name) }

// nameFromAux recovers a lock name from the part of an auxiliary name after
// "prefix:": "{name}" for a name without a hash tag, the name itself for one
// with a tag. (Redisson's rule makes the names "x" and "{x}" share their
// auxiliary names; this returns "x".)
func nameFromAux(rest string) string {
	if inner, ok := strings.CutPrefix(rest, "{"); ok {
		if inner, ok = strings.CutSuffix(inner, "}"); ok && !strings.ContainsAny(inner, "{}") {
			return inner
		}
	}
	return rest
}

// literalPattern reports whether a glob pattern matches only itself.
func literalPattern(p string) bool { return !strings.ContainsAny(p, `*?[\`) }

// globMatcher compiles a Redis glob pattern (*, ?, [...], [^...], \x) into
// a matcher of whole names.
func globMatcher(pattern string) (func(string) bool, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		case '[':
			end := strings.IndexByte(pattern[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : i+1+end]
			neg := strings.HasPrefix(class, "^")
			class = strings.TrimPrefix(class, "^")
			b.WriteString("[")
			if neg {
				b.WriteString("^")
			}
			b.WriteString(strings.NewReplacer(`\`, `\\`, `[`, `\[`).Replace(class))
			b.WriteString("]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	return re.MatchString, nil
}

// lockChannels are the Pub/Sub channel prefixes whose messages watch
// reports, with the primitive and a describer of the messages, which
// returns the event and a detail.
var lockChannels = []struct {
	prefix   string
	describe func(message string) (event, detail string)
}{
	{prefix: mutexChannelPrefix, describe: func(msg string) (string, string) {
		if msg == "0" {
			return "release", ""
		}
		return fmt.Sprintf("message %q", msg), ""
	}},
	// An RWMutex's "1" wakes every waiter. redisync and Redisson publish it
	// when a writer unlocks or downgrades; redisync also when the last
	// reader leaves (a reader who is not last publishes nothing) and when the
	// last waiting writer gives up. The message alone cannot tell these
	// apart, so the detail names them all rather than guess. A "0" is a
	// Redisson reader's unlock, which wakes one waiter.
	{prefix: rwChannelPrefix, describe: func(msg string) (string, string) {
		switch msg {
		case "1":
			return "release", "RWMutex: a write unlock or downgrade, or the last reader left; wakes every waiter"
		case "0":
			return "release", "RWMutex: a read unlock (Redisson); wakes one waiter"
		}
		return fmt.Sprintf("message %q", msg), "RWMutex"
	}},
	// A FairMutex's message is the id of the one waiter it wakes: the lock
	// was released (or force-unlocked, or a dead head was skipped) and it is
	// that waiter's turn. A release with nobody queued publishes nothing.
	{prefix: layout.FairChannelPrefix, describe: func(msg string) (string, string) {
		return "turn", "FairMutex: waiter " + msg + " is next"
	}},
	// A Semaphore's message is the id of one waiter woken because its
	// request fits now; a release that frees room for several sends several.
	{prefix: layout.SemChannelPrefix, describe: func(msg string) (string, string) {
		return "wake", "Semaphore: waiter " + msg + "'s request fits now"
	}},
}
