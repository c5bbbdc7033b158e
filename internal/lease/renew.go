package lease

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/scripts"
)

// renew sends the renewals of due (all in flight) and files the results.
func (s *Scheduler) renew(due []*Lease) {
	groups := s.group(due)
	calls := make([]scripts.Call, len(groups))
	for i, g := range groups {
		calls[i] = batchCall(g)
	}
	sent := time.Now()
	s.mu.Lock() // Touch may move a deadline of a lease in flight
	timeout := renewTimeout(due, sent)
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
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
			switch {
			case err != nil:
				l.at = minTime(time.Now().Add(backoff(l)), l.deadline)
			case renewed[j] == 1, renewed[j] == 2 && (l.changing || l.gen != l.sentGen):
				// A different state is the holder's own doing when it
				// was changing it, or changed it since this was sent.
				if !l.Fixed {
					l.deadline = sent.Add(l.TTL)
				}
				l.at = minTime(sent.Add(l.interval()), l.deadline)
			default:
				l.state = ended
				lost = append(lost, l)
				continue
			}
			l.state = waiting
			s.heap.push(l)
		}
	}
	logFailure := failure != nil && time.Since(s.lastLog) > 5*time.Second
	if logFailure {
		s.lastLog = time.Now()
	}
	s.mu.Unlock()
	if logFailure {
		s.log.Warn("redisync: lease renewal failed; retrying until the leases run out",
			"leases", len(due), "error", failure)
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
		Keys:      make([]string, 0, len(g)*len(g[0].Keys)),
		Args:      make([]string, 0, len(g)*len(g[0].sent)),
		Retryable: true, // a renewal only extends an owner's own hold
	}
	for _, l := range g {
		call.Keys = append(call.Keys, l.Keys...)
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
