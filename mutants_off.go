//go:build !redisync_mutants

package redisync

import (
	"context"
	"time"
)

// The engine's broken variants, all off in a normal build (see
// mutants_on.go): constants, so that the code under them compiles away.
const (
	mutantHandAny         = false
	mutantNoFallback      = false
	mutantUnlockAny       = false
	mutantUnlockPool      = false
	mutantHandoverRelease = false
	mutantSemLate         = false
	mutantOwnerField      = false
	mutantTakebackSync    = false
)

// pooledBudget is the unlock-pool variant's release budget: with
// mutantUnlockPool a false constant, nothing calls it in this build.
func pooledBudget(context.Context, time.Duration) (context.Context, func()) {
	panic("redisync: pooledBudget in a build without the redisync_mutants tag")
}
