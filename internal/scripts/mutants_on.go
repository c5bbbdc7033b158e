//go:build redisync_mutants

package scripts

import (
	"crypto/fips140"
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/go-redisync/redisync/internal/mutant"
)

// mutants are the broken variants of scripts (see package mutant), each one
// line changed (a variant may change a line in several scripts). This file
// is built with the redisync_mutants tag only (the chaos suite's
// self-test): a normal build has none of them, nor the mutant package.
var mutants = []struct {
	name     string
	script   **Script
	old, new string
}{
	{"unlock-any", &MutexRelease, "return redis.call('hdel', KEYS[1], ARGV[1]) == 1", "redis.call('del', KEYS[1]); return true"},
	{"fence-lower", &FenceSet, "if older(ARGV[1], seen) then", "if false then"},
	{"fair-barge", &FairAcquire, "and not held and (head == nil or head == id) then", "and not held then"},
	{"renew-blind", &MutexRenew, "renewed[i] = 0", "renewed[i] = 1"},
	// owner-field (with its Go side, which gives every hold of an owner the
	// same field): an acquire does not look at the latch of the field it
	// takes, so it takes over the entry of the owner's previous hold, or
	// takes it anew, whatever that hold's release left.
	{"owner-field", &MutexAcquire, "if redis.call('exists', lock, latch) == 0 then", "if redis.call('exists', lock) == 0 then"},
	{"owner-field", &MutexWait, "if redis.call('exists', KEYS[2]) == 1 then", "if false then"},
	{"owner-field", &FencedAcquire, "if redis.call('exists', KEYS[3]) == 1 then", "if false then"},
	{"owner-field", &RWWriteLock, "if redis.call('exists', KEYS[3]) == 1 then", "if false then"},
	{"owner-field", &RWReadLock, "if redis.call('exists', KEYS[3]) == 1 then", "if false then"},
	{"owner-field", &FairAcquire, "if redis.call('exists', KEYS[5]) == 1 then", "if false then"},
	{"once-rerun", &OnceClaim, "if redis.call('exists', KEYS[3]) == 1 then", "if false then"},
	{"wg-early", &WaitGroupAdd, "if after == 0 then", "if after <= 1 then"},
	{"election-steal", &ElectionCampaign, "if busy then", "if false then"},
	{"no-echo", &MutexRelease, "redis.call(ARGV[4], KEYS[2], '0')\nreturn", "if not n then redis.call(ARGV[4], KEYS[2], '0') end\nreturn"},
	{"xsem-overdraw", &ExpirableAcquire, "if n < want then", "if n < want - 1 then"},
	{"csem-overdraw", &CountSemAcquire, "if free < n then", "if free < n - 1 then"},
	{"rfair-barge", &RFairAcquire, "if ARGV[7] == 'own' and not held and (not head or head == id) then", "if ARGV[7] == 'own' and not held then"},
	// sem-float: a holder's entry is written from the Lua numbers of its
	// permits and version, as it once was; Lua prints a number with 14
	// digits (4503599627370495 as "4.5035996273705e+15", read back as 4).
	{"sem-float", &SemAcquire, "redis.call('hset', holders, holder, ARGV[4] .. ':' .. ARGV[10])", "redis.call('hset', holders, holder, target .. ':' .. version)"},
	{"multi-partial", &MultiAcquire, "if redis.call('exists', lock) == 1 then", "if i == 1 and redis.call('exists', lock) == 1 then"},
}

func init() {
	for _, m := range mutants {
		if mutant.On(m.name) {
			*m.script = mutate(*m.script, m.old, m.new)
		}
	}
}

// mutate returns s with old replaced by new. It panics when old is not in
// the script, so that a variant cannot silently stop being broken.
func mutate(s *Script, old, new string) *Script {
	if !strings.Contains(s.Source, old) {
		panic("scripts: mutant: " + s.Name + " does not contain " + old)
	}
	broken := *s
	broken.Source = strings.Replace(s.Source, old, new, 1)
	// A broken variant's digest is computed here, in the chaos suite's
	// build only (no variant is on in any other), FIPS 140-3 mode or not.
	var sum [sha1.Size]byte
	fips140.WithoutEnforcement(func() { sum = sha1.Sum([]byte(broken.Source)) })
	broken.SHA1 = hex.EncodeToString(sum[:])
	return &broken
}
