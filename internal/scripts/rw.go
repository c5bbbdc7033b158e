package scripts

import (
	"context"
	"strconv"
	"strings"

	"github.com/go-redisync/redisync/internal/layout"
)

// AcquireRead runs rw_rlock: read hold h takes or re-enters the read lock of
// the RWMutex at l. writer is the field of a write hold of the same owner
// (which it may read under), "" for none; pass lets it pass waiting writers
// (an owner re-entering). The call declares the timeout keys of h.Count+1
// holds, all the hold has after it unless its count in Redis is not h.Count,
// and then declares those the script asks for (see declaring).
func (r *Runner) AcquireRead(ctx context.Context, l *layout.RW, h Hold, writer string, pass bool) (Reply, error) {
	prefix := l.Timeouts(h.Field)
	keys := make([]string, 3, 4+h.Count)
	keys[0], keys[1], keys[2] = l.Key, l.Writers, latchKey(l.Latch, h.Field, h.LatchKey)
	call := Call{
		Script: RWReadLock,
		Keys:   appendTimeouts(keys, prefix, 1, h.Count+1),
		Args:   []string{h.LeaseMS, h.Field, writer, strconv.Itoa(h.Count), flag(pass), prefix},
	}
	res, _, err := r.declaring(ctx, call, 3, func(name string) bool { return strings.HasPrefix(name, prefix+":") }, nil)
	if err != nil {
		return Reply{}, err
	}
	n, err := res.AsInt64()
	return lockReply(n, call.explain(err))
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
// timeout keys with it); the last reader wakes the waiters. A final release
// that leaves other read holds needs their timeout keys too: it declares
// those that seen remembers of the lock, and remembers what the script asks
// for; its last attempt settles (see declaring).
func (r *Runner) ReleaseRead(ctx context.Context, l *layout.RW, rel *Release, seen *Readers) (Released, error) {
	var argv [7]string
	args := append(r.argv(&argv, rel), l.Tagged, "0")
	prefix := l.Timeouts(rel.Field)
	keys := []string{l.Key, l.Channel, latchKey(l.Latch, rel.Field, rel.LatchKey)}
	keys = appendTimeouts(keys, prefix, rel.To+1, rel.From)
	if rel.To == 0 {
		keys = append(keys, seen.seen()...)
	}
	call := Call{Script: RWReadUnlock, Keys: keys, Args: args, Retryable: true}
	res, named, err := r.declaring(ctx, call, 3, func(name string) bool { return strings.HasPrefix(name, l.Tagged+":") },
		func(c *Call) { c.Args[7] = "1" })
	if named != nil && rel.To == 0 {
		seen.remember(named, prefix+":")
	}
	if err != nil {
		return Released{}, err
	}
	return releasedOf(call, res)
}

// ReleaseWrite runs rw_unlock: rel's write hold leaves holds, or releases the
// write lock and wakes every waiter.
func (r *Runner) ReleaseWrite(ctx context.Context, l *layout.RW, rel *Release) (Released, error) {
	var argv [7]string
	keys := []string{l.Key, l.Channel, latchKey(l.Latch, rel.Field, rel.LatchKey)}
	return r.released(ctx, Call{Script: RWWriteUnlock, Keys: keys, Args: r.argv(&argv, rel)})
}

// ReadRenewal returns a read hold's KEYS and ARGV in an rw_renew call: the
// lock of l and the timeout keys of n holds of field (declared: see
// declaring), then field, the lease in milliseconds ("0" for a fixed lease),
// the keys' prefix, n.
func ReadRenewal(l *layout.RW, field, leaseMS string, n int) (keys, args []string) {
	prefix := l.Timeouts(field)
	keys = appendTimeouts(append(make([]string, 0, 1+n), l.Key), prefix, 1, n)
	return keys, []string{field, leaseMS, prefix, strconv.Itoa(n)}
}

// WriteRenewal returns a write hold's KEYS and ARGV in an rw_renew call: the
// lock of l; field, the lease in milliseconds, no prefix, no timeout key.
func WriteRenewal(l *layout.RW, field, leaseMS string) (keys, args []string) {
	return []string{l.Key}, []string{field, leaseMS, "", "0"}
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
