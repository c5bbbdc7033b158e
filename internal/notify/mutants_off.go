//go:build !redisync_mutants

package notify

// This package's broken variants, all off in a normal build (see
// mutants_on.go): constants, so that the code under them compiles away.
const (
	mutantLeakSubscribe = false
)
