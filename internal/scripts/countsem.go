package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// The scripts of CountingSemaphore (Redisson's RSemaphore layout).
var (
	CountSemAcquire = load("countsem_acquire")
	CountSemRelease = load("countsem_release")
	CountSemUndo    = load("countsem_undo")
)

// countSemKeys returns the keys of a CountingSemaphore call with id.
func countSemKeys(l *layout.CountSem, id string) []string {
	return []string{l.Key, l.Channel, l.Latch + ":" + id}
}

// AcquireCountSem runs countsem_acquire: call id takes n permits from the
// CountingSemaphore at l, whose count starts at size when unset. The Reply is
// Acquired (Value: free after), Busy (Value: free now) or Refused (the call
// gave up: a late copy).
func (r *Runner) AcquireCountSem(ctx context.Context, l *layout.CountSem, id string, n int64, size, latchMS string) (Reply, error) {
	return r.pair(ctx, Call{
		Script: CountSemAcquire,
		Keys:   countSemKeys(l, id),
		Args:   []string{strconv.FormatInt(n, 10), size, latchMS, r.publish},
	})
}

// ReleaseCountSem runs countsem_release: release id gives n permits back and the
// count is published. It reports whether this run applied it (false: a
// repeat) and the free permits after. Retried on a lost reply: the latch
// makes a repeat add nothing.
func (r *Runner) ReleaseCountSem(ctx context.Context, l *layout.CountSem, id string, n int64, latchMS string) (applied bool, free int64, err error) {
	status, free, err := r.twoInts(ctx, Call{Script: CountSemRelease, Keys: countSemKeys(l, id), Args: []string{strconv.FormatInt(n, 10), latchMS, r.publish}, Retryable: true})
	return status == 1, free, err
}

// UndoCountSem runs countsem_undo for call id, which asked for n permits: what it
// took is given back, and a late copy of it takes nothing for tombstoneMS.
// It reports whether the call had taken its permits. Retryable: a repeat
// finds the latch at "0" and gives nothing back twice.
func (r *Runner) UndoCountSem(ctx context.Context, l *layout.CountSem, id string, n int64, tombstoneMS string) (bool, error) {
	took, err := r.integer(ctx, Call{Script: CountSemUndo, Keys: countSemKeys(l, id), Args: []string{strconv.FormatInt(n, 10), tombstoneMS, r.publish}, Retryable: true})
	return took == 1, err
}
