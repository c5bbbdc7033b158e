package scripts

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	"github.com/go-redisync/redisync/internal/mutant"
)

// mutants are the broken variants of scripts (see package mutant), each one
// line changed. In a build without the redisync_mutants tag none is on.
var mutants = []struct {
	name     string
	script   **Script
	old, new string
}{
	{"unlock-any", &MutexRelease, "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then", "if false then"},
	{"fence-lower", &FenceSet, "if token < seen then", "if false then"},
	{"fair-barge", &FairAcquire, "and not held and (head == nil or head == id) then", "and not held then"},
	{"renew-blind", &MutexRenew, "renewed[i] = 0", "renewed[i] = 1"},
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
	src := strings.Replace(s.Source, old, new, 1)
	sum := sha1.Sum([]byte(src))
	return &Script{Name: s.Name, Source: src, SHA1: hex.EncodeToString(sum[:])}
}
