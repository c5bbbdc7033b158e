package main

import (
	"regexp"
	"strings"

	"github.com/go-redisync/redisync/internal/keys"
)

// mutexChannelPrefix is the Mutex release channel's prefix (Redisson's).
const mutexChannelPrefix = keys.MutexChannelPrefix

// rwChannelPrefix is the RWMutex channel's prefix (Redisson's RReadWriteLock).
const rwChannelPrefix = keys.RWChannelPrefix

// auxName returns the auxiliary key or channel with prefix for the lock name.
func auxName(prefix, name string) string { return keys.Aux(prefix, name) }

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
