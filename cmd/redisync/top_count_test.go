//lint:file-ignore SA2001 the locks are taken and left with nothing between on purpose: what top counts is the pairs.

package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// startTarget starts a server of its own for one test: what top counts
// depends on the server's keyspace notification setting, which the shared
// test server must not change under other tests. It skips without a real
// redis-server unless one is required.
func startTarget(t *testing.T, start func() (*redisserver.Target, error)) *redisserver.Target {
	t.Helper()
	tg, err := start()
	if err == nil && !tg.Real() {
		_ = tg.Stop()
		err = fmt.Errorf("redis-server not found: top's counts need a real server's keyspace notifications and Pub/Sub")
	}
	if err != nil {
		if !redisserver.RequireServer() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Stop() })
	return tg
}

// libClients returns n redisync Clients on tg, closed when the test ends.
func libClients(t *testing.T, tg *redisserver.Target, n int, opts ...redisync.Option) []*redisync.Client {
	t.Helper()
	var cs []*redisync.Client
	for range n {
		c, _ := libClientOn(t, tg, opts...)
		cs = append(cs, c)
	}
	return cs
}

// A topProbe is top's sampler and model on a server, refreshed by the test.
type topProbe struct {
	s     *topSampler
	model *topModel
	notes []string
}

// newTopProbe starts top's sampler for pattern on tg (classic: the locks
// publish classically on a cluster).
func newTopProbe(t *testing.T, tg *redisserver.Target, pattern string, classic bool) *topProbe {
	t.Helper()
	rc, err := tg.NewClient()
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	match, err := globMatcher(pattern)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p := &topProbe{s: &topSampler{rc: rc, match: match, pattern: pattern, maxNames: 100, w: &watcher{}}, model: newTopModel()}
	p.notes, err = p.s.start(ctx, 0, classic)
	require.NoError(t, err)
	t.Cleanup(func() { p.s.stop(cancel) })
	p.refresh(t)
	return p
}

// refresh takes one refresh into the model.
func (p *topProbe) refresh(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := p.s.sample(ctx, time.Now())
	require.NoError(t, err)
	p.model.update(r)
}

// totals returns the acquisitions and releases counted for each row, by
// "name kind".
func (p *topProbe) totals() map[string][2]int64 {
	out := map[string][2]int64{}
	for _, r := range p.model.rows {
		out[r.key.name+" "+string(r.kind)] = [2]int64{r.acquired, r.released}
	}
	return out
}

// settle refreshes until the totals equal want (events arrive after the
// calls return) or 5 s pass, then once more after a pause, so that a count
// that overshoots shows, and checks them.
func (p *topProbe) settle(t *testing.T, want map[string][2]int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		time.Sleep(50 * time.Millisecond)
		p.refresh(t)
		if fmt.Sprint(p.totals()) == fmt.Sprint(want) || time.Now().After(deadline) {
			break
		}
	}
	time.Sleep(200 * time.Millisecond)
	p.refresh(t)
	require.Equal(t, want, p.totals())
}

// With keyspace notifications on, top counts every acquisition and release
// of every primitive exactly: handovers (one release and one acquisition),
// re-entered reads, readers leaving one by one, a Semaphore holder taking
// more permits (not a new acquisition) and giving them back in parts,
// and a lease that runs out (a release nobody published).
func TestTopCountsExactly(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, func() (*redisserver.Target, error) {
		return redisserver.StartStandalone("--notify-keyspace-events", "Khgx")
	})
	cs := libClients(t, tg, 2)
	p := newTopProbe(t, tg, "n:*", false)
	require.Empty(t, p.notes)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string][2]int64{}

	m := cs[0].NewMutex("n:mutex")
	for range 5 {
		m.Lock()
		m.Unlock()
	}
	want["n:mutex Mutex"] = [2]int64{5, 5}
	p.settle(t, want)

	// Handovers: the holder's release hands the lock to a queued waiter.
	a, b := cs[0].NewMutex("n:handed"), cs[1].NewMutex("n:handed")
	a.Lock()
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 3 {
			b.Lock()
			b.Unlock()
		}
	})
	time.Sleep(100 * time.Millisecond)
	a.Unlock()
	wg.Wait()
	want["n:handed Mutex"] = [2]int64{4, 4}
	p.settle(t, want)

	rw0, rw1 := cs[0].NewRWMutex("n:rw"), cs[1].NewRWMutex("n:rw")
	rw0.RLock()
	rw1.RLock()
	rw0.RLock() // a re-entered read: the reader holds twice
	rw0.RUnlock()
	rw0.RUnlock()
	rw1.RUnlock()
	rw0.Lock()
	rw0.Unlock()
	want["n:rw RWMutex"] = [2]int64{3, 3}
	p.settle(t, want)

	f := cs[0].NewFairMutex("n:fair")
	for range 3 {
		f.Lock()
		f.Unlock()
	}
	want["n:fair FairMutex"] = [2]int64{3, 3}
	p.settle(t, want)

	s := cs[0].NewSemaphore("n:sem", 3)
	require.NoError(t, s.Acquire(ctx, 2))
	require.NoError(t, s.Acquire(ctx, 1)) // the same holder, more permits
	s.Release(1)
	s.Release(2)
	s2 := cs[1].NewSemaphore("n:sem", 3)
	require.NoError(t, s2.Acquire(ctx, 1))
	s2.Release(1)
	want["n:sem Semaphore"] = [2]int64{2, 2}
	p.settle(t, want)

	o := cs[0].NewOnce("n:once")
	require.NoError(t, o.Do(ctx, func(context.Context) error { return nil }))
	want["n:once Once"] = [2]int64{1, 1}
	e := cs[0].NewElection("n:election")
	require.NoError(t, e.Campaign(ctx, "v1"))
	require.NoError(t, e.Proclaim(ctx, "v2"))
	require.NoError(t, e.Resign(ctx))
	want["n:election Election"] = [2]int64{1, 1}
	p.settle(t, want)

	// A WaitGroup holds nothing: a row with its counter, and no counts.
	wg2 := cs[0].NewWaitGroup("n:wg")
	require.NoError(t, wg2.Add(ctx, 2))
	want["n:wg WaitGroup"] = [2]int64{0, 0}
	p.settle(t, want)
	require.Equal(t, "count 2", p.model.rows[rowKey{"n:wg", "name"}].holder())

	// A lease that runs out: no release is published, the key expires.
	short := cs[0].NewMutex("n:lease", redisync.WithLease(300*time.Millisecond))
	short.Lock()
	want["n:lease Mutex"] = [2]int64{1, 1}
	p.settle(t, want)
}

// Without keyspace notifications top counts from the locks' messages: a
// Mutex's releases and handovers exactly, and says what it misses.
func TestTopCountsFromMessages(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, func() (*redisserver.Target, error) { return redisserver.StartStandalone() })
	cs := libClients(t, tg, 2)
	p := newTopProbe(t, tg, "n:*", false)
	require.Len(t, p.notes, 1)
	require.Contains(t, p.notes[0], "keyspace notifications are off")
	a, b := cs[0].NewMutex("n:mutex"), cs[1].NewMutex("n:mutex")
	for range 4 {
		a.Lock()
		a.Unlock()
	}
	a.Lock()
	var wg sync.WaitGroup
	wg.Go(func() { b.Lock(); b.Unlock() })
	time.Sleep(100 * time.Millisecond)
	a.Unlock()
	wg.Wait()
	p.settle(t, map[string][2]int64{"n:mutex Mutex": {6, 6}})
}
