//go:build redisync_mutants

package redisync

import (
	"context"
	"time"

	"github.com/go-redisync/redisync/internal/mutant"
)

// The engine's broken variants (see internal/mutant), each switched on when
// REDISYNC_MUTANT names it, in a build with the redisync_mutants tag only
// (the chaos suite's self-test). mutants_off.go, the normal build's, has
// them all as false constants: the variants' code compiles away, and the
// mutant package is not linked.
var (
	mutantHandAny         = mutant.On("hand-any")
	mutantNoFallback      = mutant.On("no-fallback")
	mutantUnlockAny       = mutant.On("unlock-any")
	mutantUnlockPool      = mutant.On("unlock-pool")
	mutantHandoverRelease = mutant.On("handover-release")
	mutantSemLate         = mutant.On("sem-late")
	mutantOwnerField      = mutant.On("owner-field")
	mutantTakebackSync    = mutant.On("takeback-sync")
)

// pooledBudget is the unlock-pool variant's release budget.
func pooledBudget(parent context.Context, d time.Duration) (context.Context, func()) {
	return mutant.PooledBudget(parent, d)
}
