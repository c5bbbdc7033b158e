//go:build !redisync_mutants

package mutant

import (
	"context"
	"time"
)

// On reports whether the broken variant called name is switched on. Without
// the redisync_mutants build tag it never is.
func On(name string) bool { return false }

// PooledBudget is the unlock-pool variant's release budget (see budget.go,
// built with the redisync_mutants tag only). Without the tag no variant is
// on, and it is never called.
func PooledBudget(parent context.Context, d time.Duration) (context.Context, func()) {
	panic("mutant: PooledBudget called in a build without the redisync_mutants tag")
}
