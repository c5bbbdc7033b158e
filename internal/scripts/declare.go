package scripts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/rueidis"
)

// Every key a script touches arrives in KEYS. An RWMutex's read timeout
// keys are named after each read hold's field and count ("{name}:<field>:
// rwlock_timeout:<i>", Redisson's layout), which only the script reads for
// certain, so their scripts follow keys_lib.lua's "declare or ask" protocol:
// the call declares, after its fixed KEYS, the keys it expects to need, and
// an attempt whose script finds one missing writes nothing and names every
// key it needs; the call then tries again with those.
//
// That keeps what the scripts promise. An attempt that asks changes nothing,
// so a copy of it that arrives late, after the call has gone on or given up,
// is harmless; the next attempt is the same call (the same hold, counts and
// latch, the same Retryable) with more keys, as a resent call is: the latch
// and the compare-and-set counts that make a resent call harmless make it
// so too. A script that has every key it needs touches the keys Redisson
// names, with Redisson's values, to the byte.
//
// declareRounds bounds the attempts of one call. An attempt asks again only
// when what it reads changed since the one before: a hold's own count, which
// only its owner's calls change, one at a time (a late copy of one of them
// may, once); or, for a read release, the other read holds, which change
// whenever a reader comes (their fields are new for each hold). Readers that come faster than
// a round trip would keep a release asking, so its last attempt settles
// instead (rw_runlock's ARGV[8]): it releases, and leaves the lock's expiry
// as it is. A call whose last attempt still asks fails, saying so, having
// changed nothing.
const declareRounds = 3

// declaring runs call, whose first fixed KEYS are fixed and the rest
// declared, until its script stops asking for keys: each asking reply names
// the keys that attempt needed beyond the fixed ones, which the next attempt
// declares instead. owned tells the names the call may declare (one of the
// lock's, in its slot); settle, if set, makes the last attempt of call one
// that settles rather than asks. It returns the last reply and what the last
// asking one named (nil when none asked).
func (r *Runner) declaring(ctx context.Context, call Call, fixed int, owned func(string) bool, settle func(*Call)) (rueidis.RedisResult, []string, error) {
	var named []string
	for round := 1; ; round++ {
		res := r.Exec(ctx, call)
		needed, asked := askedFor(res)
		if !asked {
			return res, named, nil
		}
		for _, name := range needed {
			if !owned(name) {
				return res, named, fmt.Errorf("%s asked for the key %q, which is not the lock's", call.Script.Name, name)
			}
		}
		named = needed
		if round == declareRounds {
			return res, named, fmt.Errorf("%s needed other keys in each of %d attempts", call.Script.Name, declareRounds)
		}
		call.Keys = append(call.Keys[:fixed:fixed], needed...)
		if round+1 == declareRounds && settle != nil {
			settle(&call)
		}
	}
}

// askedFor returns the keys an asking reply {"keys", name...} names, and
// whether res is one.
func askedFor(res rueidis.RedisResult) ([]string, bool) {
	v, err := res.ToArray()
	if err != nil || len(v) == 0 {
		return nil, false
	}
	if tag, err := v[0].ToString(); err != nil || tag != "keys" {
		return nil, false
	}
	names := make([]string, 0, len(v)-1)
	for _, n := range v[1:] {
		name, err := n.ToString()
		if err != nil {
			return nil, false
		}
		names = append(names, name)
	}
	return names, true
}

// appendTimeouts appends to keys the read timeout keys prefix:from to
// prefix:to (none when to < from).
func appendTimeouts(keys []string, prefix string, from, to int) []string {
	for i := from; i <= to; i++ {
		keys = append(keys, prefix+":"+strconv.Itoa(i))
	}
	return keys
}

// Readers remembers, for one RWMutex, the timeout keys of the other read
// holds that its latest final read release that asked for keys needed: the
// next one declares them, so that it asks no more while the same readers
// hold. It is safe for concurrent use.
type Readers struct {
	mu   sync.Mutex
	keys []string
}

// seen returns the keys remembered.
func (rs *Readers) seen() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.keys
}

// remember keeps the keys of names that are not own's, the prefix of the
// releasing hold's own timeout keys: those end with the release.
func (rs *Readers) remember(names []string, own string) {
	others := make([]string, 0, len(names))
	for _, name := range names {
		if !strings.HasPrefix(name, own) {
			others = append(others, name)
		}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.keys = others
}
