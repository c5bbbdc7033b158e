//go:build redisync_mutants

package mutant

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// PooledBudget returns a context with parent's values that ends d from now,
// and the function that puts it back in a pool when its deadline has not
// passed: the release budget of the unlock-pool variant. A context derived
// from it that outlives the free (a quorum's per-server one, whose timer
// removes it from its parent after the release returned) reads a recycled
// budget, whose parent is nil: a data race, and a nil dereference that
// crashes the process.
func PooledBudget(parent context.Context, d time.Duration) (context.Context, func()) {
	b, _ := budgets.Get().(*budget)
	if b == nil {
		b = &budget{done: make(chan struct{})}
		b.timer = time.AfterFunc(time.Hour, func() {
			b.expired.Store(true)
			close(b.done)
		})
	}
	b.Context, b.deadline = parent, time.Now().Add(d)
	b.timer.Reset(d)
	return b, b.free
}

// A budget is a context that ends some time after it was taken: its
// parent's values and a deadline. One whose deadline has not passed goes
// back to the pool with its timer and channel; one that expired is dropped.
type budget struct {
	context.Context // the parent
	deadline        time.Time
	done            chan struct{}
	timer           *time.Timer
	expired         atomic.Bool
}

var budgets sync.Pool

// free returns b to the pool unless its deadline has passed.
func (b *budget) free() {
	if b.timer.Stop() {
		b.Context = nil
		budgets.Put(b)
	}
}

// Deadline returns the budget's deadline.
func (b *budget) Deadline() (time.Time, bool) { return b.deadline, true }

// Done returns a channel closed when the deadline passes.
func (b *budget) Done() <-chan struct{} { return b.done }

// Err returns context.DeadlineExceeded once the deadline has passed.
func (b *budget) Err() error {
	if b.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}
