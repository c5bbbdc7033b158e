//go:build redisync_mutants

package quorum

import "github.com/go-redisync/redisync/internal/mutant"

// This package's broken variants (see internal/mutant), each switched on
// when REDISYNC_MUTANT names it, in a build with the redisync_mutants tag
// only; mutants_off.go, the normal build's, has them as false constants.
var (
	mutantVoteAtOnce = mutant.On("quorum-vote-at-once")
	mutantMinority   = mutant.On("quorum-minority")
)
