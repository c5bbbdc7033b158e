// Package redisync provides distributed synchronization primitives backed by
// Redis, shaped like the sync package:
//
//   - [Mutex], an exclusive lock (reentrant for an owner from [WithOwner])
//     that implements [sync.Locker] and waits with a [context.Context] in
//     [Mutex.LockContext];
//   - [RWMutex], readers or one writer, writer-preferring, with a lease per
//     read hold;
//   - [FairMutex], served in strict arrival order across processes, in a
//     layout of its own or, from [Client.NewRedissonFairMutex], in
//     Redisson's RFairLock layout, in one line with Java's waiters;
//   - [FencedMutex], whose every acquisition gets a fencing token, and
//     [Fence], the resource side that rejects stale tokens;
//   - [Semaphore], weighted and leased permits, like x/sync's Weighted;
//   - [CountingSemaphore], a count of free permits in Redisson's RSemaphore
//     layout, shared with Java services, neither leased nor in order;
//   - [ExpirableSemaphore], permits with ids and fixed leases in Redisson's
//     RPermitExpirableSemaphore layout, shared with Java services;
//   - [Once], a function run once across processes, like [sync.Once];
//   - [WaitGroup], a counter processes wait on, like [sync.WaitGroup], in
//     Redisson's RCountDownLatch layout;
//   - [MultiMutex], several names locked as one, all or none, like
//     Redisson's RedissonMultiLock;
//   - [Election], one leader among campaigners, like etcd's
//     concurrency.Election.
//
// One [Client] per process shares a script registry, one renewal scheduler and
// one multiplexed subscriber across every handle; handles are cheap. Mutex,
// FencedMutex, RWMutex, CountingSemaphore, ExpirableSemaphore and WaitGroup
// use Redisson's data layouts (RLock, RFencedLock, RReadWriteLock,
// RSemaphore, RPermitExpirableSemaphore, RCountDownLatch), so Go and Java
// services exclude, and wait for, each other on the same names.
// [WithObserver] reports what the locks do (see the redisyncotel module for
// OpenTelemetry). [NewQuorum] makes a Client whose Mutex and FencedMutex are
// held on a majority of independent deployments (the Redlock algorithm),
// with a server that restarted empty kept out of the vote and fencing tokens
// read from and written to a majority.
//
// # Safety model
//
// A lock held through Redis is a lease, and a lease can be lost: the holder's
// process may pause (GC, swap, a stopped VM) past its lease, the network may
// cut it off from Redis, or a failover may lose a write that was acknowledged.
// Then a second holder can enter while the first still believes it holds the
// lock. redisync reports such a loss as soon as it knows ([Mutex.Done] is
// closed and [Mutex.Err] wraps [ErrLockLost]), but a report cannot reach a
// paused process before its next write. Leases alone therefore do not give
// mutual exclusion. Where correctness matters, the protected resource itself
// must reject writes from a holder that has been superseded: take a
// [FencedMutex], whose every acquisition gets a token greater than all before
// it, send the token with every write, and have the resource keep the highest
// token it has seen and refuse lower ones. [Fence] does that for a value kept
// in Redis; in SQL the same check is a condition on the write:
//
//	UPDATE orders SET status = $3, fence = $1 WHERE id = $2 AND fence <= $1
//
// Tokens stay increasing across lease expiries and the loss of the counter
// (a restart without persistence), being floored at the server's clock. What
// stays unsafe: a server clock that steps backwards (or a failover to a
// replica whose clock lags) together with the loss of the counter, and a
// resource that accepts a stale holder's write before the new holder's first
// write reached it.
//
// # Leases
//
// By default a lock is held in watchdog mode: its lease
// ([DefaultWatchdogTimeout], 30 s) is renewed every third of the lease while
// the process lives, so a crashed holder's lock expires within one lease.
// [WithLease] sets a fixed lease instead: no renewal, and the lock expires
// when the lease runs out. Lease arithmetic uses expiries set by Redis and the
// local monotonic clock, never the client's wall clock.
//
// # Owners
//
// A handle is one owner: like sync.Mutex, its Lock is not reentrant. A context
// made by [WithOwner] carries an explicit owner, for which LockContext and
// UnlockContext re-enter (the hold count goes up and down), as Redisson's
// locks do per thread.
package redisync
