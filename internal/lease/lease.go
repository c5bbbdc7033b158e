// Package lease is the renewal scheduler: one goroutine per redisync Client
// keeps every lease that Client holds, renews watchdog leases in batches, and
// reports a lease as lost when Redis says the hold is gone or when its deadline
// passes without a successful renewal.
//
// Deadlines are measured on the local monotonic clock from the moment the
// request that set the expiry was sent, less a margin. The server starts its
// own countdown later (when the request arrives), so the local deadline falls
// before the server's expiry and a holder hears of a loss before Redis
// forgets it.
package lease

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/go-redisync/redisync/internal/scripts"
)

// Causes passed to [Lease.Lost].
var (
	// ErrExpired means the lease's deadline passed without a successful renewal
	// (or, for a fixed lease, that it simply ran out).
	ErrExpired = errors.New("lease expired")
	// ErrNotHeld means a renewal found that the owner no longer holds the lock:
	// the key expired, was deleted, or was taken by someone else.
	ErrNotHeld = errors.New("renewal found the hold gone")
)

// MaxBatch is the largest number of leases renewed by one script call, as in
// Redisson's lockWatchdogBatchSize.
const MaxBatch = 100

// A Lease is one hold watched by the scheduler. The exported fields are set
// before [Scheduler.Add] and not changed afterwards.
type Lease struct {
	// Key is the lock key. On a cluster, leases are renewed in groups that
	// share its slot.
	Key string
	// Renew is the batch renewal script, or nil for a fixed lease that is
	// never renewed and only expires. The script takes the Keys and Args of
	// each lease in the batch, concatenated, and replies one integer per lease:
	// 1 renewed, 0 no longer held, 2 renewed but the hold's state in Redis
	// differs from what Args say it should be (see Changing), -n (a lease
	// with Grow) it did nothing for the lease, whose renewal needs keys that
	// its Keys do not declare, n by its count.
	Renew *scripts.Script
	// Renewer, set instead of Renew, renews the lease by itself: a hold that
	// no batch script renews (a quorum's, held on several servers).
	Renewer Renewer
	// Keys are this lease's KEYS in a renewal call (for a Mutex, its key).
	// Only the scheduler changes them, with Grow.
	Keys []string
	// Args are this lease's ARGV in a renewal call (for a Mutex, the hold's
	// field and the lease in milliseconds). Change them with Update only;
	// the scheduler changes them with Grow.
	Args []string
	// Grow, when set, returns the Keys and Args of a renewal that declares
	// the keys of n (an RWMutex read hold's timeout keys: n holds): a
	// renewal that replies -n for the lease is sent again at once with them,
	// from then on (see grow).
	Grow func(n int) (keys, args []string)
	// TTL is the length of the lease. A watchdog lease is renewed every TTL/3.
	TTL time.Duration
	// Every, when set and shorter than TTL/3, is how often the lease is
	// renewed instead (an RWMutex read hold restores the lock's expiry that
	// a Redisson reader may have shortened).
	Every time.Duration
	// Fixed marks a lease whose renewals check the hold and keep the lock
	// around it, but do not extend the hold itself: its deadline stays TTL
	// after its acquire, as for a lease without Renew.
	Fixed bool
	// Lost is told once, from the scheduler's goroutine, when the lease is
	// lost, with ErrExpired or ErrNotHeld. It must not block.
	Lost Reporter

	// at is the lease's next event: a renewal, or its deadline (a fixed
	// lease's; a lease whose renewal is in flight, which is lost unless the
	// renewal comes back before).
	at       time.Time
	deadline time.Time // when the server forgets the hold, at the latest
	index    int       // position in the heap, -1 when not in it
	state    state
	// gen counts the changes of Args and of changing; a renewal in flight
	// carries the Args and gen of when it was sent.
	gen      uint64
	changing bool
	sent     []string
	sentKeys []string
	sentGen  uint64
	// grown records that the lease's latest renewal asked for keys (see
	// grow), until the next one that does not.
	grown bool
}

// A Renewer renews one lease by itself (see Lease.Renewer). The scheduler
// calls it from a goroutine of its own for each renewal, with a context
// that ends in time for the lease's deadline.
type Renewer interface {
	// RenewLease renews the hold once. It returns when the renewal was
	// sent and, when it renewed, how long from then the hold lasts at least
	// (its validity). With err nil and renewed false the hold is gone (a
	// loss); an error is a failure, retried until the deadline.
	RenewLease(ctx context.Context) (sent time.Time, validity time.Duration, renewed bool, err error)
}

// renewed reports whether l is renewed, by a script or by itself, rather
// than fixed.
func (l *Lease) renewed() bool { return l.Renew != nil || l.Renewer != nil }

// A Reporter is told of the loss of a lease. Holders implement it on the
// record they already have, so that watching a lease allocates no closure.
type Reporter interface {
	// LeaseLost is called with the cause of the loss.
	LeaseLost(cause error)
}

// ReportFunc adapts a function to a Reporter.
type ReportFunc func(cause error)

// LeaseLost calls f(cause).
func (f ReportFunc) LeaseLost(cause error) { f(cause) }

type state uint8

const (
	idle     state = iota // not added, or removed
	waiting               // in the heap, for its next event
	inflight              // in the heap, for its deadline, and in a renewal call that has not returned
	ended                 // lost
)

// margin is how long before the end of a lease that lasts d, as the local
// clock reckons it from the request that set it, the lease counts as lost:
// a fiftieth of d, from 2 ms (but never more than half of d) to 1 s. The reckoning already ends before the
// server's expiry (the server counts from the request's arrival); the
// margin keeps the report ahead of the expiry when the scheduler's
// goroutine runs late, so that a holder is told before a rival can get in.
func margin(d time.Duration) time.Duration {
	return min(max(d/50, 2*time.Millisecond), d/2, time.Second)
}

func (l *Lease) interval() time.Duration {
	if l.Every > 0 && l.Every < l.TTL/3 {
		return l.Every
	}
	return l.TTL / 3
}

// Scheduler renews and watches leases. Its zero value is not usable; call New.
//
// Its goroutine never waits for Redis: each round's renewals go out from a
// goroutine of their own (see round), and a lease whose renewal is in flight
// stays in the heap for its deadline, so that the deadline is reported on
// time whatever the call does (a call may wait in rueidis for a reconnection
// far longer than its context says, on another caller's deadline).
type Scheduler struct {
	runner  *scripts.Runner
	cluster bool
	log     *slog.Logger
	onBatch func(Batch) // optional, see OnBatch

	mu      sync.Mutex
	heap    leaseHeap
	lastLog time.Time
	// sleeping is when the run loop will wake by itself, the zero time
	// while it is awake. A lease due before it must kick the loop; one due
	// after it need not, which spares a wake-up of the loop per lock taken.
	sleeping time.Time

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
	// flights are the renewal calls in flight, which stop returns from
	// when Close cancels them.
	flights sync.WaitGroup
	stop    context.Context
	cancel  context.CancelFunc
}

// A Batch describes one round of renewals, for [OnBatch].
type Batch struct {
	Size     int           // leases sent
	Failures int           // leases whose call failed (retried until their deadline)
	Duration time.Duration // the round trip of the calls
	Err      error         // one of the failures, nil when none
}

// An Option configures a Scheduler.
type Option func(*Scheduler)

// OnBatch makes the scheduler call f after each round of renewals, from its
// goroutine. f must not block.
func OnBatch(f func(Batch)) Option {
	return func(s *Scheduler) { s.onBatch = f }
}

// New starts a scheduler that renews through runner. With cluster set,
// renewals are grouped by the slot of each lease's Key.
func New(runner *scripts.Runner, cluster bool, log *slog.Logger, opts ...Option) *Scheduler {
	s := &Scheduler{
		runner:  runner,
		cluster: cluster,
		log:     log,
		kick:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	for _, opt := range opts {
		opt(s)
	}
	s.stop, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s
}

// Add starts watching l, whose expiry was set by a request sent at sent.
func (s *Scheduler) Add(l *Lease, sent time.Time) { s.AddWithin(l, sent, l.TTL) }

// AddWithin starts watching l, whose expiry was set at least ttl (at most
// l.TTL) after sent: a hold handed to a waiter, which lasts until the
// waiter's heartbeat deadline, until its first renewal gives it l.TTL. That
// renewal comes after l's usual interval, or half of ttl if sooner.
func (s *Scheduler) AddWithin(l *Lease, sent time.Time, ttl time.Duration) {
	s.mu.Lock()
	l.deadline = sent.Add(ttl - margin(ttl))
	l.at = l.deadline
	if l.renewed() {
		l.at = minTime(sent.Add(min(l.interval(), ttl/2)), l.deadline)
	}
	l.state = waiting
	s.heap.push(l)
	early := s.heap[0] == l && l.at.Before(s.sleeping)
	s.mu.Unlock()
	if early {
		s.wake()
	}
}

// Touch records that a request sent at sent set l's expiry again (a reentrant
// acquire does), which moves its deadline.
func (s *Scheduler) Touch(l *Lease, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.state != waiting && l.state != inflight {
		return
	}
	if d := sent.Add(l.TTL - margin(l.TTL)); d.After(l.deadline) {
		l.deadline = d
		if !l.renewed() || l.state == inflight {
			l.at = d
			s.heap.fix(l)
		}
	}
}

// Changing records that the holder of l is about to change the state that
// l's renewal checks (a Semaphore's count), with a call whose outcome it
// learns later. Until the next Update, a renewal that finds another state
// than its Args say is not a loss: the holder's own call may have changed it.
func (s *Scheduler) Changing(l *Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.changing = true
	l.gen++
}

// Update replaces the Args of l's renewals with args, which describe the
// state the holder has confirmed, and ends a Changing.
func (s *Scheduler) Update(l *Lease, args []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.Args = args
	l.changing = false
	l.gen++
}

// Remove stops watching l. It reports false when l had already been lost (or
// was never added), in which case Lost has been or is being called.
//
// A caller releasing a lock removes its lease first, so that no renewal can
// follow the release.
func (s *Scheduler) Remove(l *Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch l.state {
	case waiting, inflight: // a renewal in flight sees the idle state and drops its result
		s.heap.remove(l)
	default:
		return false
	}
	l.state = idle
	return true
}

// Replace puts next in the place of old, a lease of the same hold (its Key,
// Keys and TTL) that changes hands locally: next inherits old's deadline, so
// the hold is never believed to last longer than old's last confirmed
// renewal allows, and is renewed when old would have been (at once if a
// renewal of old is in flight: its result is dropped). It reports false,
// changing nothing, when old is not watched or its deadline has passed.
func (s *Scheduler) Replace(old, next *Lease) bool {
	s.mu.Lock()
	now := time.Now()
	if (old.state != waiting && old.state != inflight) || !now.Before(old.deadline) {
		s.mu.Unlock()
		return false
	}
	next.deadline, next.at = old.deadline, old.at
	if old.state == inflight {
		next.at = now
	}
	s.heap.remove(old)
	old.state, next.state = idle, waiting
	s.heap.push(next)
	early := s.heap[0] == next && next.at.Before(s.sleeping)
	s.mu.Unlock()
	if early {
		s.wake()
	}
	return true
}

// CheckNow renews at once every renewed lease whose renewal is not in
// flight, instead of at its next interval: a holder that may have missed
// the news of a loss (its Client was not subscribed to the channel that
// tells it) learns of the loss within a round trip. Fixed leases without
// a renewal keep waiting for their deadline.
func (s *Scheduler) CheckNow() {
	now := time.Now()
	s.mu.Lock()
	moved := false
	for _, l := range slices.Clone(s.heap) { // fix reorders the heap
		if l.state == waiting && l.renewed() && l.at.After(now) {
			l.at = now
			s.heap.fix(l)
			moved = true
		}
	}
	s.mu.Unlock()
	if moved {
		s.wake()
	}
}

// Current reports whether l is watched and its deadline has not passed: the
// hold it describes may still be in Redis. A process that was paused past the
// deadline sees false before the scheduler's goroutine has run again.
func (s *Scheduler) Current(l *Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return (l.state == waiting || l.state == inflight) && time.Now().Before(l.deadline)
}

// Len returns the number of leases being watched.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.heap)
	return n
}

// Close stops the scheduler and waits for its goroutine to exit, and for
// the renewals in flight, whose contexts it cancels. Leases still watched
// are dropped without a call to Lost.
func (s *Scheduler) Close() {
	close(s.quit)
	<-s.done
	s.cancel()
	s.flights.Wait()
}

// awake records that the run loop no longer sleeps: it looks at the heap
// again before it does, so an Add meanwhile needs no kick.
func (s *Scheduler) awake() {
	s.mu.Lock()
	s.sleeping = time.Time{}
	s.mu.Unlock()
}

func (s *Scheduler) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Scheduler) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		wait := time.Hour
		if len(s.heap) > 0 {
			wait = time.Until(s.heap[0].at)
		}
		if wait > 0 {
			s.sleeping = time.Now().Add(wait)
		}
		s.mu.Unlock()
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-s.kick:
				s.awake()
				continue
			case <-s.quit:
				return
			}
			s.awake()
		}
		select {
		case <-s.quit:
			return
		default:
		}
		s.round()
	}
}

// round handles every lease that is due: it reports those whose deadline
// passed (a renewal in flight or not) and renews the rest in batches, sent
// from a goroutine of their own. Leases due within half a renewal interval
// are renewed early with them, so leases taken at different moments fall
// into step and share calls from then on. A lease in flight waits in the
// heap for its deadline: its renewal's result moves it on, or it is lost.
func (s *Scheduler) round() {
	now := time.Now()
	var due, lost []*Lease
	s.mu.Lock()
	for len(s.heap) > 0 {
		l := s.heap[0]
		if l.at.After(now) && (l.state == inflight || !l.renewed() || l.at.Sub(now) > l.interval()/2) {
			break
		}
		if !now.Before(l.deadline) {
			s.heap.pop()
			l.state = ended
			lost = append(lost, l)
			continue
		}
		l.state = inflight
		l.sent, l.sentKeys, l.sentGen = l.Args, l.Keys, l.gen
		l.at = l.deadline
		s.heap.fix(l)
		due = append(due, l)
	}
	s.mu.Unlock()
	for _, l := range lost {
		l.Lost.LeaseLost(ErrExpired)
	}
	if len(due) > 0 {
		if mutantRenewInline {
			s.renew(due) // the goroutine waits for Redis, its timers with it
			return
		}
		s.flights.Go(func() { s.renew(due) })
	}
}
