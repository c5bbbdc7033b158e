//go:build !redisync_mutants

package mutant

// On reports whether the broken variant called name is switched on. Without
// the redisync_mutants build tag it never is.
func On(name string) bool { return false }
