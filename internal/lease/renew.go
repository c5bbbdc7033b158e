package lease

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// renew sends the renewals of due (all in flight) and files the results.
func (s *Scheduler) renew(due []*Lease) {
	if slices.ContainsFunc(due, func(l *Lease) bool { return l.Renewer != nil }) {
		own := slices.DeleteFunc(slices.Clone(due), func(l *Lease) bool { return l.Renewer == nil })
		due = slices.DeleteFunc(due, func(l *Lease) bool { return l.Renewer != nil })
		s.renewOwn(own)
		if len(due) == 0 {
			return
		}
	}
	groups := s.group(due)
	calls := make([]scripts.Call, len(groups))
	for i, g := range groups {
		calls[i] = batchCall(g)
	}
	sent := time.Now()
	s.mu.Lock() // Touch may move a deadline of a lease in flight
	timeout := renewTimeout(due, sent)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.stop, timeout)
	if mutantRenewInline {
		// The renewals wait for Redis however long it takes, as they did
		// when a call waiting for another's dial in rueidis ignored its own
		// deadline; with the scheduler's goroutine waiting for them.
		ctx, cancel = context.WithCancel(s.stop)
	}
	results := s.runner.ExecMulti(ctx, calls)
	cancel()
	batch := Batch{Size: len(due), Duration: time.Since(sent)}

	var lost []*Lease
	var failure error
	s.mu.Lock()
	for i, g := range groups {
		renewed, err := results[i].AsIntSlice()
		if err == nil && len(renewed) != len(g) {
			err = fmt.Errorf("renewal script replied %d values for %d leases", len(renewed), len(g))
		}
		if err != nil {
			failure = err
			batch.Failures += len(g)
		}
		for j, l := range g {
			if l.state != inflight {
				continue // removed while in flight
			}
			if err == nil && renewed[j] < 0 && l.Grow != nil {
				if err := s.grow(l, int(-renewed[j])); err != nil {
					failure = err
					batch.Failures++
				}
				continue
			}
			l.grown = false
			// A different state (2) is the holder's own doing when it was
			// changing it, or changed it since this was sent.
			ok := err == nil && (renewed[j] == 1 || renewed[j] == 2 && (l.changing || l.gen != l.sentGen))
			var until time.Time
			if !l.Fixed {
				until = sent.Add(l.TTL - margin(l.TTL))
			}
			if s.settle(l, err != nil, ok, sent, until) {
				lost = append(lost, l)
			}
		}
	}
	s.mu.Unlock()
	s.filed(batch, failure, lost)
}

// grow files a renewal of l that asked for keys its Keys do not declare, n
// by l's own count (s.mu held, l in flight): l declares those in its later
// renewals and is renewed again at once, and a copy of the asking call that arrives
// late is harmless, since it did nothing for l. A lease that asks right
// after it grew is a failure, retried after a backoff until its deadline:
// Grow does not give what the script wants.
func (s *Scheduler) grow(l *Lease, n int) error {
	l.Keys, l.Args = l.Grow(n)
	l.gen++
	if l.grown {
		s.settle(l, true, false, time.Time{}, time.Time{})
		return fmt.Errorf("renewal script asked for the keys of %d again after the lease declared them", n)
	}
	l.grown = true
	l.at, l.state = time.Now(), waiting
	s.heap.fix(l)
	s.wake()
	return nil
}

// renewOwn renews the leases of due that renew themselves (all in flight),
// each from a goroutine of its own, and files the results: a renewal
// counts from when it was sent, for the validity it reports.
func (s *Scheduler) renewOwn(due []*Lease) {
	type result struct {
		sent     time.Time
		validity time.Duration
		renewed  bool
		err      error
	}
	results := make([]result, len(due))
	s.mu.Lock()
	timeout := renewTimeout(due, time.Now())
	s.mu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(s.stop, timeout)
	var wg sync.WaitGroup
	for i, l := range due {
		wg.Go(func() {
			r := &results[i]
			r.sent, r.validity, r.renewed, r.err = l.Renewer.RenewLease(ctx)
		})
	}
	wg.Wait()
	cancel()
	batch := Batch{Size: len(due), Duration: time.Since(start)}
	var lost []*Lease
	var failure error
	s.mu.Lock()
	for i, l := range due {
		if l.state != inflight {
			continue // removed while in flight
		}
		r := results[i]
		if r.err != nil {
			failure = r.err
			batch.Failures++
		}
		if s.settle(l, r.err != nil, r.renewed, r.sent, r.sent.Add(min(r.validity, l.TTL)-margin(min(r.validity, l.TTL)))) {
			lost = append(lost, l)
		}
	}
	s.mu.Unlock()
	s.filed(batch, failure, lost)
}

// settle files the outcome of lease l's renewal (s.mu held, l in flight, in
// the heap): failed, it is tried again after a backoff; renewed, by a call
// sent at sent that made it last until until at least (the zero time: no
// longer than before), it is renewed again an interval after sent; else it
// is lost, and settle reports true. It wakes the run loop when l's next
// event comes before the loop would wake.
func (s *Scheduler) settle(l *Lease, failed, renewed bool, sent, until time.Time) (lost bool) {
	switch {
	case failed:
		l.at = minTime(time.Now().Add(backoff(l)), l.deadline)
	case renewed:
		if until.After(l.deadline) {
			l.deadline = until
		}
		l.at = minTime(sent.Add(l.interval()), l.deadline)
	default:
		l.state = ended
		s.heap.remove(l)
		return true
	}
	l.state = waiting
	s.heap.fix(l)
	if s.heap[0] == l && l.at.Before(s.sleeping) {
		s.wake()
	}
	return false
}

// filed reports a round of renewals: its failure (logged at most every 5
// s), the batch to OnBatch, and the leases lost.
func (s *Scheduler) filed(batch Batch, failure error, lost []*Lease) {
	s.mu.Lock()
	logFailure := failure != nil && time.Since(s.lastLog) > 5*time.Second
	if logFailure {
		s.lastLog = time.Now()
	}
	s.mu.Unlock()
	if logFailure {
		s.log.Warn("redisync: lease renewal failed; retrying until the leases run out",
			"leases", batch.Size, "error", failure)
	}
	if s.onBatch != nil {
		batch.Err = failure
		s.onBatch(batch)
	}
	for _, l := range lost {
		l.Lost.LeaseLost(ErrNotHeld)
	}
}

// group splits due into batches of at most MaxBatch leases that share a
// renewal script and, on a cluster, a slot.
func (s *Scheduler) group(due []*Lease) [][]*Lease {
	type groupKey struct {
		script *scripts.Script
		slot   uint16
	}
	open := make(map[groupKey]int)
	var groups [][]*Lease
	for _, l := range due {
		k := groupKey{script: l.Renew}
		if s.cluster {
			k.slot = layout.Slot(l.Key)
		}
		i, ok := open[k]
		if !ok || len(groups[i]) == MaxBatch {
			i = len(groups)
			open[k] = i
			groups = append(groups, make([]*Lease, 0, min(MaxBatch, len(due))))
		}
		groups[i] = append(groups[i], l)
	}
	return groups
}

func batchCall(g []*Lease) scripts.Call {
	call := scripts.Call{
		Script:    g[0].Renew,
		Keys:      make([]string, 0, len(g)*len(g[0].sentKeys)),
		Args:      make([]string, 0, len(g)*len(g[0].sent)),
		Retryable: true, // a renewal only extends an owner's own hold
	}
	for _, l := range g {
		call.Keys = append(call.Keys, l.sentKeys...)
		call.Args = append(call.Args, l.sent...)
	}
	return call
}

// renewTimeout (s.mu held) bounds a renewal call so that the scheduler is back
// in time to report the earliest deadline among the leases it carries.
func renewTimeout(due []*Lease, sent time.Time) time.Duration {
	timeout := due[0].interval()
	for _, l := range due {
		timeout = min(timeout, l.interval(), l.deadline.Sub(sent))
	}
	return max(timeout, 10*time.Millisecond)
}

// backoff is the jittered wait before retrying a failed renewal.
func backoff(l *Lease) time.Duration {
	d := min(max(l.interval()/8, 10*time.Millisecond), time.Second)
	return d/2 + rand.N(d)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
