// Package redisync provides distributed synchronization primitives backed by
// Redis, shaped like the sync package: a [Mutex] that implements
// [sync.Locker] and waits with a [context.Context] in [Mutex.LockContext].
//
// One [Client] per process shares a script registry, one renewal scheduler and
// one multiplexed subscriber across every handle; handles are cheap. Mutex
// uses Redisson's RLock data layout, so Go and Java services exclude each
// other on the same names.
//
// # Safety model
//
// A lock held through Redis is a lease, and a lease can be lost: the holder's
// process may pause (GC, swap, a stopped VM) past its lease, the network may
// cut it off from Redis, or a failover may lose a write that was acknowledged.
// Then a second holder can enter while the first still believes it holds the
// lock. redisync reports such a loss as soon as it knows ([Mutex.Done] is
// closed and [Mutex.Err] wraps [ErrLockLost]), but a report cannot reach a
// process that is paused. Where correctness matters, the protected resource
// itself must reject writes from a holder that has been superseded: use a
// fencing token and check it at the resource.
//
// # Leases
//
// By default a lock is held in watchdog mode: its lease
// ([DefaultWatchdogTimeout], 30 s) is renewed every third of the lease while
// the process lives, so a crashed holder's lock expires within one lease.
// [WithLease] sets a fixed lease instead: no renewal, and the lock expires
// when the lease runs out. All lease arithmetic uses relative expiries set by
// Redis and the local monotonic clock; the client's wall clock plays no part.
//
// # Owners
//
// A handle is one owner: like sync.Mutex, its Lock is not reentrant. A context
// made by [WithOwner] carries an explicit owner, for which LockContext and
// UnlockContext re-enter (the hold count goes up and down), as Redisson's
// locks do per thread.
package redisync
