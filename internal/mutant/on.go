//go:build redisync_mutants

package mutant

import "os"

// selected is the variant switched on for this process.
var selected = os.Getenv("REDISYNC_MUTANT")

// On reports whether the broken variant called name is switched on: whether
// REDISYNC_MUTANT names it.
func On(name string) bool { return selected == name }
