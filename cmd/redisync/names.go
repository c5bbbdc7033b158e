package main

import (
	"fmt"
	"regexp"
	"strconv"
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

// patternArg returns the optional PATTERN argument of watch and top
// ("*" when absent) and its matcher.
func patternArg(rest []string) (pattern string, match func(string) bool, err error) {
	pattern = "*"
	switch len(rest) {
	case 0:
	case 1:
		pattern = rest[0]
	default:
		return "", nil, usagef("want at most one PATTERN, got %d arguments", len(rest))
	}
	if match, err = globMatcher(pattern); err != nil {
		return "", nil, usagef("bad PATTERN %q: %v", pattern, err)
	}
	return pattern, match, nil
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

// A lockChannel is a primitive's Pub/Sub channel, by its prefix, with a
// describer of its messages, which returns the event and a detail.
type lockChannel struct {
	prefix string
	// braced marks Redisson's RCountDownLatch form, prefix + "__{" + name +
	// "}" whatever the name, instead of auxName(prefix, name).
	braced   bool
	describe func(message string) (event, detail string)
	// group is the detector group (layout.go) of the primitives that
	// publish on the channel, and kind the one a message tells of (a
	// FencedMutex publishes as a Mutex does).
	group string
	kind  lockKind
	// echoed names the event whose message the publisher follows with a
	// "0" for the waiters outside a queue: that "0" is part of the event,
	// not one of its own.
	echoed string
}

// channel returns the channel of the lock called name.
func (lc lockChannel) channel(name string) string {
	if lc.braced {
		return layout.WaitGroupOf(name).Channel
	}
	return auxName(lc.prefix, name)
}

// pattern returns the PSUBSCRIBE pattern of every lock's channel.
func (lc lockChannel) pattern() string {
	if lc.braced {
		return lc.prefix + "__{*"
	}
	return lc.prefix + ":*"
}

// name returns the lock name of channel, if it is one of lc's.
func (lc lockChannel) name(channel string) (string, bool) {
	if lc.braced {
		rest, ok := strings.CutPrefix(channel, lc.prefix+"__{")
		return strings.TrimSuffix(rest, "}"), ok
	}
	rest, ok := strings.CutPrefix(channel, lc.prefix+":")
	return nameFromAux(rest), ok
}

// lockChannels are the channels whose messages watch reports.
var lockChannels = []lockChannel{
	// A Mutex release publishes "0" when it leaves the lock free, and the
	// place number of the queued redisync waiter it handed the lock to
	// otherwise (a decimal above 1, which Redisson's waiters ignore),
	// followed by a "0" that makes the waiters outside the queue look again.
	{prefix: mutexChannelPrefix, group: "name", kind: kindMutex, echoed: "handover", describe: func(msg string) (string, string) {
		if msg == "0" {
			return "release", ""
		}
		if n, err := strconv.ParseInt(msg, 10, 64); err == nil && n > 1 {
			return "handover", "Mutex: handed to the first live waiter in its queue"
		}
		return fmt.Sprintf("message %q", msg), ""
	}},
	// An RWMutex's "1" wakes every waiter. redisync and Redisson publish it
	// when a writer unlocks or downgrades; redisync also when the last
	// reader leaves (a reader who is not last publishes nothing) and when the
	// last waiting writer gives up. The message alone cannot tell these
	// apart, so the detail names them all rather than guess. A "0" is a
	// Redisson reader's unlock, which wakes one waiter.
	{prefix: rwChannelPrefix, group: "name", kind: kindRWMutex, describe: func(msg string) (string, string) {
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
	{prefix: layout.FairChannelPrefix, group: "fair", kind: kindFairMutex, describe: func(msg string) (string, string) {
		return "turn", "FairMutex: waiter " + msg + " is next"
	}},
	// A Semaphore's message is the id of one waiter woken because its
	// request fits now; a release that frees room for several sends several.
	{prefix: layout.SemChannelPrefix, group: "sem", kind: kindSemaphore, describe: func(msg string) (string, string) {
		return "wake", "Semaphore: waiter " + msg + "'s request fits now"
	}},
	// A Once's claim ended: "1" its function succeeded (the waiters return),
	// "0" it did not (the next waiter runs it).
	{prefix: layout.OnceChannelPrefix, group: "once", kind: kindOnce, describe: func(msg string) (string, string) {
		if msg == "1" {
			return "done", "Once: the function succeeded; the waiters return"
		}
		return "release", "Once: the function did not complete; the next caller runs it"
	}},
	// An Election's change: "1" a campaigner was elected, "2" the leader
	// proclaimed a new value, "0" the leader resigned (or was force-unlocked).
	{prefix: layout.ElectionChannelPrefix, group: "election", kind: kindElection, describe: func(msg string) (string, string) {
		switch msg {
		case "1":
			return "elected", "Election: a new leader"
		case "2":
			return "proclaim", "Election: the leader proclaimed a new value"
		case "0":
			return "resign", "Election: the leader resigned; a waiting campaigner is elected"
		}
		return fmt.Sprintf("message %q", msg), "Election"
	}},
	// A CountingSemaphore's (RSemaphore's) or an ExpirableSemaphore's
	// (RPermitExpirableSemaphore's) count after a release, from Go or Java,
	// after leases that ended were counted back, or after its first use set
	// it: its free permits. The two share the channel's name.
	{prefix: layout.CountSemChannelPrefix, group: "name", kind: kindCountingSemaphore, describe: func(msg string) (string, string) {
		return "permits", "CountingSemaphore or ExpirableSemaphore (Redisson's RSemaphore or RPermitExpirableSemaphore): free permits now " + msg + ", after a release, ended leases or the count's setting"
	}},
	// A WaitGroup's (RCountDownLatch's) counter reached zero.
	{prefix: layout.WaitGroupChannelPrefix, group: "name", kind: kindWaitGroup, braced: true, describe: func(msg string) (string, string) {
		if msg == "0" {
			return "zero", "WaitGroup: the counter reached zero; Wait returns"
		}
		return fmt.Sprintf("message %q", msg), "WaitGroup"
	}},
}
