package scripts

import (
	"context"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
)

// AcquireRead runs rw_rlock: read hold h takes or re-enters the read lock of
// the RWMutex at l. writer is the field of a write hold of the same owner
// (which it may read under), "" for none; pass lets it pass waiting writers
// (an owner re-entering).
func (r *Runner) AcquireRead(ctx context.Context, l *layout.RW, h Hold, writer string, pass bool) (Reply, error) {
	return lockReply(r.integer(ctx, Call{
		Script: RWReadLock,
		Keys:   []string{l.Key, l.Writers, l.Timeouts(h.Field), l.Latch},
		Args:   []string{h.LeaseMS, h.Field, writer, strconv.Itoa(h.Count), flag(pass)},
	}))
}

// AcquireWrite runs rw_lock: write hold h takes or re-enters the write lock
// of the RWMutex at l. A writer that claims (it will wait) holds new readers
// back for claimMS milliseconds, under its hold's field as its id.
func (r *Runner) AcquireWrite(ctx context.Context, l *layout.RW, h Hold, claimMS string, claim bool) (Reply, error) {
	return lockReply(r.integer(ctx, Call{
		Script: RWWriteLock,
		Keys:   []string{l.Key, l.Writers, latchKey(l.Latch, h.Field, h.LatchKey)},
		Args:   []string{h.LeaseMS, h.Field, strconv.Itoa(h.Count), h.Field, claimMS, flag(claim)},
	}))
}

// ReleaseRead runs rw_runlock: rel's read hold leaves holds, or ends (and its
// timeout keys with it); the last reader wakes the waiters.
func (r *Runner) ReleaseRead(ctx context.Context, l *layout.RW, rel *Release) (Released, error) {
	var argv [7]string
	args := r.argv(&argv, rel)
	return r.released(ctx, Call{Script: RWReadUnlock, Keys: []string{l.Key, l.Channel, l.Latch, l.Timeouts(rel.Field)},
		Args: append(args, l.Tagged)})
}

// ReleaseWrite runs rw_unlock: rel's write hold leaves holds, or releases the
// write lock and wakes every waiter.
func (r *Runner) ReleaseWrite(ctx context.Context, l *layout.RW, rel *Release) (Released, error) {
	var argv [7]string
	keys := []string{l.Key, l.Channel, latchKey(l.Latch, rel.Field, rel.LatchKey)}
	return r.released(ctx, Call{Script: RWWriteUnlock, Keys: keys, Args: r.argv(&argv, rel)})
}

// LeaveWriters runs rw_writer_leave: the waiting writer id takes back its
// claim, and the readers it held back are woken when it was the last.
func (r *Runner) LeaveWriters(ctx context.Context, l *layout.RW, id string) error {
	call := Call{
		Script:    RWWriterLeave,
		Keys:      []string{l.Writers, l.Channel},
		Args:      []string{id, r.publish},
		Retryable: true, // leaving twice leaves once
	}
	return call.explain(r.Exec(ctx, call).Error())
}

// flag is a Lua script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
