// Package quorum holds a lock on a majority of N independent Redis
// deployments (the Redlock algorithm), with two additions that make it safe
// to rely on: a server that restarted empty does not vote until every lease
// it could have granted has run out, and fencing tokens are read from a
// majority and written back to one, so that they never repeat or go back
// (quorum_lib.lua and quorum_acquire.lua say how each server plays its part).
//
// This package is the algorithm over the servers' script runners: one
// acquire, renewal, release or token write at a time, each sent to every
// server at once and decided by the majority's answers within a validity.
// Waiting, the watchdog and the API of a lock sit above it.
package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A Server is one deployment of a quorum: a standalone server or a
// Sentinel-managed primary.
type Server struct {
	Name   string // how errors name it (its address)
	RC     rueidis.Client
	Runner *scripts.Runner
}

// Config is a Quorum's timing.
type Config struct {
	// Bound is how long a server found without its marker (restarted empty)
	// stays out of the vote: at least the longest lease any client of the
	// quorum uses, plus the drift allowance.
	Bound time.Duration
	// DriftFactor and DriftMin make the clock-drift allowance of a lease:
	// lease*DriftFactor + DriftMin (redsync's 1% and 2 ms by default).
	DriftFactor float64
	DriftMin    time.Duration
	// TimeoutFactor bounds each server's share of an acquire or a renewal:
	// lease*TimeoutFactor, at least MinTimeout, so that a dead or slow
	// server does not eat the validity.
	TimeoutFactor float64
	MinTimeout    time.Duration
	// Latch is how long the undo of a first acquire that fell short keeps
	// its field latched on each server, refusing a late copy of the acquire
	// (see Result.Spent).
	Latch time.Duration
	// Logger hears of a catch-up that failed (see CatchUp).
	Logger *slog.Logger
}

// DefaultConfig returns the defaults for the longest lease maxLease.
func DefaultConfig(maxLease time.Duration) Config {
	c := Config{DriftFactor: 0.01, DriftMin: 2 * time.Millisecond, TimeoutFactor: 0.1, MinTimeout: 50 * time.Millisecond,
		Latch: time.Minute, Logger: slog.New(slog.DiscardHandler)}
	c.Bound = maxLease + c.drift(maxLease)
	return c
}

// drift is the clock-drift allowance of a lease.
func (c Config) drift(lease time.Duration) time.Duration {
	return time.Duration(float64(lease)*c.DriftFactor) + c.DriftMin
}

// timeout is each server's share of a call with lease.
func (c Config) timeout(lease time.Duration) time.Duration {
	return max(time.Duration(float64(lease)*c.TimeoutFactor), c.MinTimeout)
}

// A Quorum is N independent servers, N odd and at least 3.
type Quorum struct {
	servers []Server
	cfg     Config
	bound   string // cfg.Bound in ms, for the scripts

	// The catch-ups of restarted servers (catchup.go): catching[i] is set
	// while server i's runs, work counts them, and stop ends them at Close.
	catching []atomic.Bool
	work     sync.WaitGroup
	stop     context.Context
	cancel   context.CancelFunc
}

// ErrNoQuorum reports that fewer than a majority of the servers answered.
var ErrNoQuorum = errors.New("redisync: fewer than a majority of the quorum's servers answered")

// New returns the quorum of servers.
func New(servers []Server, cfg Config) (*Quorum, error) {
	if n := len(servers); n < 3 || n%2 == 0 {
		return nil, fmt.Errorf("redisync: a quorum needs an odd number of servers, at least 3; got %d", n)
	}
	if cfg.Bound <= 0 {
		return nil, errors.New("redisync: a quorum needs a positive restart bound")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	q := &Quorum{servers: servers, cfg: cfg, bound: strconv.FormatInt(cfg.Bound.Milliseconds(), 10),
		catching: make([]atomic.Bool, len(servers))}
	q.stop, q.cancel = context.WithCancel(context.Background())
	return q, nil
}

// Close ends the catch-ups under way and waits for them.
func (q *Quorum) Close() {
	q.cancel()
	q.work.Wait()
}

// Majority is how many servers make a majority.
func (q *Quorum) Majority() int { return len(q.servers)/2 + 1 }

// Bound is how long a server that restarted empty stays out of the vote.
func (q *Quorum) Bound() time.Duration { return q.cfg.Bound }

// Len is the number of servers.
func (q *Quorum) Len() int { return len(q.servers) }

// each runs f on every server at once, each with its own context bounded by
// d (none when d is 0), and returns the errors by server.
func (q *Quorum) each(ctx context.Context, d time.Duration, f func(ctx context.Context, i int, s Server) error) []error {
	errs := make([]error, len(q.servers))
	var wg sync.WaitGroup
	for i, s := range q.servers {
		wg.Go(func() {
			sctx, cancel := ctx, context.CancelFunc(func() {})
			if d > 0 {
				sctx, cancel = context.WithTimeout(ctx, d)
			}
			defer cancel()
			errs[i] = f(sctx, i, s)
		})
	}
	wg.Wait()
	return errs
}

// unreachable is the error for the servers whose calls failed with errs,
// when fewer than a majority answered, else nil.
func (q *Quorum) unreachable(errs []error) error {
	names, first := q.failed(errs)
	if len(q.servers)-len(names) >= q.Majority() {
		return nil
	}
	return fmt.Errorf("%w: %d of %d unreachable (%s): %w", ErrNoQuorum, len(names), len(q.servers), strings.Join(names, ", "), first)
}

// unanswered is the error of a call that the servers neither confirmed nor
// denied on a majority (what, yes times, no times) because the others, their
// errors in errs, did not answer: it wraps the first of those.
func (q *Quorum) unanswered(what string, yes, no int, errs []error) error {
	names, first := q.failed(errs)
	return fmt.Errorf("redisync: %s on %d of %d servers, denied on %d, unanswered on %s: %w", what, yes, len(q.servers), no, strings.Join(names, ", "), first)
}

// failed names the servers whose calls failed with errs, and returns the
// first of those errors.
func (q *Quorum) failed(errs []error) (names []string, first error) {
	for i, err := range errs {
		if err != nil {
			names = append(names, q.servers[i].Name)
			first = cmpOr(first, err)
		}
	}
	return names, first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Init sets up a new quorum: when a majority of the servers has no marker
// (no server has voted since they were set up, under the assumption that a
// majority keeps its data), those without one are marked to vote at once.
// Otherwise a server without a marker is one that restarted empty, and the
// scripts keep it out of the vote for the bound. Init is idempotent.
func (q *Quorum) Init(ctx context.Context) error {
	if err := q.distinct(ctx); err != nil {
		return err
	}
	missing := make([]bool, len(q.servers))
	// A server's share of each round is bounded, so that one that hangs
	// does not spend the budget of the rounds after it: NewQuorum failed
	// with a majority answering when one server was stopped.
	errs := q.each(ctx, initShare, func(ctx context.Context, i int, s Server) error {
		n, err := s.RC.Do(ctx, s.RC.B().Exists().Key(layout.QuorumMarker).Build()).AsInt64()
		missing[i] = err == nil && n == 0
		return err
	})
	if err := q.unreachable(errs); err != nil {
		return err
	}
	count := 0
	for _, m := range missing {
		if m {
			count++
		}
	}
	if count < q.Majority() {
		q.catchUpStale(ctx)
		return nil
	}
	errs = q.each(ctx, initShare, func(ctx context.Context, i int, s Server) error {
		if !missing[i] {
			return nil
		}
		_, err := s.Runner.InitQuorum(ctx)
		return err
	})
	return q.unreachable(errs)
}

// initShare bounds a server's share of each of Init's rounds.
const initShare = 1500 * time.Millisecond

// distinct returns an error when two of q's servers are one server, reached
// through two clients (the same address twice, or two names of one
// machine): its votes would count twice, and a majority would not be one.
// Each server is given a key of its own, and none may see another's. A
// server that cannot be given its key within a second (unreachable, or an
// ACL that refuses the key) is not compared.
func (q *Quorum) distinct(ctx context.Context) error {
	nonce := strconv.FormatInt(rand.Int64(), 36)
	probe := func(i int) string { return layout.QuorumProbe + ":" + nonce + ":" + strconv.Itoa(i) }
	// Each round bounds each server's share, so that a server that does
	// not answer costs the check a second, not the caller's whole budget.
	const share = time.Second
	set := q.each(ctx, share, func(ctx context.Context, i int, s Server) error {
		return s.RC.Do(ctx, s.RC.B().Set().Key(probe(i)).Value("1").Px(time.Minute).Build()).Error()
	})
	same := make([]int, len(q.servers)) // another server whose key server i has, plus one
	q.each(ctx, share, func(ctx context.Context, i int, s Server) error {
		if set[i] != nil {
			return nil
		}
		for j := range q.servers {
			if j == i || set[j] != nil {
				continue
			}
			n, err := s.RC.Do(ctx, s.RC.B().Exists().Key(probe(j)).Build()).AsInt64()
			if err == nil && n == 1 {
				same[i] = j + 1
			}
		}
		return nil
	})
	q.each(ctx, share, func(ctx context.Context, i int, s Server) error {
		if set[i] == nil {
			s.RC.Do(ctx, s.RC.B().Del().Key(probe(i)).Build())
		}
		return nil
	})
	for i, j := range same {
		if j > 0 {
			return fmt.Errorf("redisync: quorum deployments %d (%s) and %d (%s) are one server: a majority must be of distinct ones",
				min(i, j-1), q.servers[min(i, j-1)].Name, max(i, j-1), q.servers[max(i, j-1)].Name)
		}
	}
	return nil
}

// catchUpStale starts the catch-up of each server that restarted empty and
// was not caught up (see CatchUp).
func (q *Quorum) catchUpStale(ctx context.Context) {
	for i, s := range q.servers {
		if from, keeps, err := q.marker(ctx, s); err == nil && from != "" && !keeps {
			q.catchUpSoon(i)
		}
	}
}

// A Result is the outcome of an acquire on the quorum.
type Result struct {
	// Held reports that a majority granted the hold within its validity:
	// it is held until Sent plus Validity at least.
	Held     bool
	Sent     time.Time
	Validity time.Duration
	// Wait, when not held, is how long the lock stays taken on the servers
	// that refused it (the shortest remaining lease among them), -1 when
	// unknown.
	Wait time.Duration
	// Counter is the highest token counter that a majority of the servers
	// could tell, -1 when fewer than a majority could.
	Counter int64
	// Gone reports that a re-entry found its hold gone on a majority.
	Gone bool
	// Spent reports that a first acquire was not held: it was undone with
	// its field latched, so that neither a late copy of it nor of its undo
	// can touch a later hold. The call's next attempt must ask with a new
	// field (the same one would be refused where the undo landed, and a
	// late undo would take its hold away).
	Spent bool
	// Votes are the servers' answers, by server; Errs their failures.
	Votes []scripts.Vote
	Errs  []error
}

// Granted returns how many servers granted the hold.
func (r *Result) Granted() int {
	n := 0
	for i, v := range r.Votes {
		if r.Errs[i] == nil && v.Outcome == scripts.Acquired {
			n++
		}
	}
	return n
}

// Acquire asks every server for hold h of the lock k with lease (h.LeaseMS
// is set from it). A hold that a majority did not grant within its validity
// is undone on every server at once: a first acquire's field is latched
// (Result.Spent), a re-entry's count set back. It returns an error wrapping
// ErrNoQuorum, naming the servers, when fewer than a majority answered.
func (q *Quorum) Acquire(ctx context.Context, k *scripts.QuorumKeys, h scripts.Hold, lease time.Duration) (Result, error) {
	h.LeaseMS = strconv.FormatInt(lease.Milliseconds(), 10)
	res := Result{Sent: time.Now(), Votes: make([]scripts.Vote, len(q.servers)), Wait: -1, Counter: -1}
	res.Errs = q.each(ctx, q.cfg.timeout(lease), func(ctx context.Context, i int, s Server) (err error) {
		bound := q.bound
		if mutantVoteAtOnce {
			bound = "0"
		}
		res.Votes[i], err = s.Runner.AcquireQuorum(ctx, k, h, bound)
		return err
	})
	res.Validity = lease - time.Since(res.Sent) - q.cfg.drift(lease)
	var counters []int64
	gone := 0
	for i, v := range res.Votes {
		if res.Errs[i] != nil {
			continue
		}
		if v.Stale {
			q.catchUpSoon(i)
		}
		if v.Counter >= 0 {
			counters = append(counters, v.Counter)
		}
		switch {
		case v.Outcome == scripts.Gone:
			gone++
		case v.Outcome == scripts.Busy && !v.Abstain && v.Value >= 0 && (res.Wait < 0 || time.Duration(v.Value)*time.Millisecond < res.Wait):
			res.Wait = time.Duration(v.Value) * time.Millisecond
		}
	}
	if len(counters) >= q.Majority() {
		res.Counter = slices.Max(counters)
	}
	res.Gone = gone >= q.Majority()
	need := q.Majority()
	if mutantMinority {
		need = 1
	}
	res.Held = res.Granted() >= need && res.Validity > 0
	if !res.Held {
		q.undo(ctx, k, h, lease, &res)
		res.Spent = h.Count == 0
	}
	return res, q.unreachable(res.Errs)
}

// undo takes back what the acquire of h, with result res, may have granted:
// a first acquire's hold, latched, a re-entry's count; on the servers that
// granted it or did not answer (a server that refused it has nothing to
// give back, and no copy of the acquire left to come). It waits for that up
// to returnSlack, and lets it finish in the background (Close waits for
// it): the acquire returns by its caller's deadline whatever the servers do.
func (q *Quorum) undo(ctx context.Context, k *scripts.QuorumKeys, h scripts.Hold, lease time.Duration, res *Result) {
	rel := scripts.Release{Field: h.Field, From: h.Count + 1, To: h.Count}
	if h.Count == 0 {
		rel = q.Retire(h.Field)
	}
	ctx = context.WithoutCancel(ctx)
	errs, votes := slices.Clone(res.Errs), slices.Clone(res.Votes)
	done := make(chan struct{})
	q.work.Go(func() {
		defer close(done)
		q.each(ctx, q.cfg.timeout(lease), func(ctx context.Context, i int, s Server) error {
			if errs[i] != nil || votes[i].Outcome == scripts.Acquired {
				_, err := s.Runner.ReleaseQuorum(ctx, k, &rel)
				return err
			}
			return nil
		})
	})
	t := time.NewTimer(returnSlack)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// returnSlack is how long an acquire that fell short waits for its undo
// before it returns, the undo going on (see undo).
const returnSlack = 20 * time.Millisecond

// Retire returns the release that ends a first acquire of field whose
// outcome will not be used, latching the field so that a late copy of the
// acquire takes nothing.
func (q *Quorum) Retire(field string) scripts.Release {
	return scripts.Release{Field: field, From: 1, To: 0, Latch: strconv.FormatInt(q.cfg.Latch.Milliseconds(), 10), Undo: true}
}

// ErrRenewShort reports a renewal that fewer than a majority confirmed,
// while a majority may still hold: a failure to retry, not a loss.
var ErrRenewShort = errors.New("redisync: fewer than a majority confirmed the renewal")

// Renew extends hold field of the lock k to lease on every server where it
// is (a server that lost it is not given it back: see quorum_renew.lua). It
// returns when it was sent and, renewed, the validity from then: a majority
// renewed it within it. Not renewed, with a nil error, the hold is lost: so
// many servers said it is not there that no majority can hold it. Else the
// error says what fell short (ErrNoQuorum, ErrRenewShort).
func (q *Quorum) Renew(ctx context.Context, k *scripts.QuorumKeys, field string, lease time.Duration) (sent time.Time, validity time.Duration, renewed bool, err error) {
	ms := strconv.FormatInt(lease.Milliseconds(), 10)
	ok := make([]bool, len(q.servers))
	sent = time.Now()
	errs := q.each(ctx, q.cfg.timeout(lease), func(ctx context.Context, i int, s Server) (err error) {
		ok[i], err = s.Runner.RenewQuorum(ctx, k, field, ms)
		return err
	})
	validity = lease - time.Since(sent) - q.cfg.drift(lease)
	yes, no := 0, 0
	for i, err := range errs {
		switch {
		case err != nil:
		case ok[i]:
			yes++
		default:
			no++
		}
	}
	switch {
	case no > len(q.servers)-q.Majority():
		return sent, 0, false, nil
	case yes >= q.Majority() && validity > 0:
		return sent, validity, true, nil
	}
	if err := q.unreachable(errs); err != nil {
		return sent, 0, false, err
	}
	return sent, 0, false, fmt.Errorf("%w: %d of %d renewed, %d refused, within %v", ErrRenewShort, yes, len(q.servers), no, time.Since(sent))
}

// A Hold is one hold of a quorum lock, which the lease scheduler renews
// (it is a lease.Renewer).
type Hold struct {
	Q     *Quorum
	Keys  *scripts.QuorumKeys
	Field string
	Lease time.Duration
}

// RenewLease renews h once (see Quorum.Renew).
func (h *Hold) RenewLease(ctx context.Context) (time.Time, time.Duration, bool, error) {
	return h.Q.Renew(ctx, h.Keys, h.Field, h.Lease)
}

// Release runs rel, a release of a hold of the lock k, on every server,
// each bounded as an acquire with the longest lease is (a server that does
// not answer keeps the hold until its lease runs out). It reports on how
// many servers the hold was there (or had been released: a repeat). The
// hold was gone from a majority, and so lost, only when more servers than a
// minority said it was not there; when too few confirmed the release and
// too few denied the hold for that (some did not answer), the outcome is
// unknown and Release returns an error wrapping the first server's.
func (q *Quorum) Release(ctx context.Context, k *scripts.QuorumKeys, rel scripts.Release) (int, error) {
	statuses := make([]int64, len(q.servers))
	errs := q.each(ctx, q.cfg.timeout(q.cfg.Bound), func(ctx context.Context, i int, s Server) error {
		r, err := s.Runner.ReleaseQuorum(ctx, k, &rel)
		statuses[i] = r.Status
		return err
	})
	yes, no := 0, 0
	for i, st := range statuses {
		switch {
		case errs[i] != nil:
		case st >= 0:
			yes++
		default:
			no++
		}
	}
	if err := q.unreachable(errs); err != nil {
		return yes, err
	}
	if yes < q.Majority() && no <= len(q.servers)-q.Majority() {
		return yes, q.unanswered("released", yes, no, errs)
	}
	return yes, nil
}

// ForceUnlock deletes the lock key on every server, whoever holds it, and
// publishes message on channel there; it returns the hold fields it deleted.
func (q *Quorum) ForceUnlock(ctx context.Context, key, channel, message string) ([]string, error) {
	var mu sync.Mutex
	var fields []string
	errs := q.each(ctx, q.cfg.timeout(q.cfg.Bound), func(ctx context.Context, _ int, s Server) error {
		f, err := s.Runner.ForceUnlockMutex(ctx, key, channel, message)
		mu.Lock()
		for _, x := range f {
			if !slices.Contains(fields, x) {
				fields = append(fields, x)
			}
		}
		mu.Unlock()
		return err
	})
	return fields, q.unreachable(errs)
}

// ErrTokenNotWritten reports that a token could not be written to a
// majority: it must not be used.
var ErrTokenNotWritten = errors.New("redisync: the fencing token was not written to a majority")

// Token makes the fencing token that follows counter (the highest a
// majority could tell, as an acquire read it) and writes it to every
// server, which raises each counter to it (a server that could not tell
// its counter can from then on). The token may be used only once a
// majority has it: else Token returns an error wrapping ErrTokenNotWritten.
func (q *Quorum) Token(ctx context.Context, k *scripts.QuorumKeys, counter int64, lease time.Duration) (int64, error) {
	if counter < 0 {
		return 0, fmt.Errorf("%w: fewer than a majority could tell their counter", ErrTokenNotWritten)
	}
	token := counter + 1
	errs := q.each(ctx, q.cfg.timeout(lease), func(ctx context.Context, _ int, s Server) error {
		_, err := s.Runner.RaiseQuorumToken(ctx, k, token, q.bound) // the counter is at least token now
		return err
	})
	if err := q.unreachable(errs); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrTokenNotWritten, err)
	}
	return token, nil
}
