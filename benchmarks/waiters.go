package benchmarks

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// WaitersResult is scenario 7: many goroutines of one process waiting on
// fewer names held elsewhere, then all served as the names are released.
type WaitersResult struct {
	Waiters, Names int
	// Conns is how many connections the waiting process opened on the
	// server (connected_clients while waiting, less the count before).
	Conns int
	// Heap is the live heap the waiting process gained while its waiters
	// waited (goroutine stacks not included).
	Heap uint64
	// Goroutines counts the library's goroutines beyond the waiters.
	Goroutines int
	// Drain is the time from the release of the first name until the last
	// waiter had locked and unlocked.
	Drain time.Duration
	// Served counts the waiters that got the lock (and released it);
	// Failed those whose Lock returned an error.
	Served, Failed int
	// TimedOut reports that the drain did not end within the time allowed.
	TimedOut bool
}

// Waiters is scenario 7. A holder Client holds names locks; a second Client
// starts waiters goroutines, each with its own handle on name i%names, that
// lock, unlock and exit. After settle the connections and heap of the
// waiting Client are read, the holder releases every name, and the drain is
// timed, for at most timeout.
func Waiters(ctx context.Context, p Peer, addr string, admin rueidis.Client, waiters, names int, settle, timeout time.Duration) (WaitersResult, error) {
	res := WaitersResult{Waiters: waiters, Names: names}
	h, _, err := holdMany(ctx, p, addr, "waiters", names)
	if err != nil {
		return res, err
	}
	fail := func(err error) (WaitersResult, error) { return res, errors.Join(err, h.release(ctx)) }
	conns0, err := connectedClients(ctx, admin)
	if err != nil {
		return fail(err)
	}
	heap0, g0 := liveHeap(), runtime.NumGoroutine()
	wc, err := p.Connect(addr)
	if err != nil {
		return fail(err)
	}
	defer wc.Close()

	wctx, cancel := context.WithTimeout(ctx, settle+timeout)
	defer cancel()
	var served, failed atomic.Int64
	var started, done sync.WaitGroup
	started.Add(waiters)
	done.Add(waiters)
	for i := range waiters {
		go func() {
			defer done.Done()
			m := wc.NewMutex(h.names[i%names])
			started.Done()
			held, err := m.Lock(wctx)
			if err == nil {
				err = held.Unlock(ctx)
			}
			if err != nil {
				failed.Add(1)
				return
			}
			served.Add(1)
		}()
	}
	started.Wait()
	time.Sleep(settle) // first attempts made, subscriptions in place
	conns1, err := connectedClients(ctx, admin)
	if err != nil {
		cancel()
		done.Wait()
		return fail(err)
	}
	res.Conns = conns1 - conns0
	heap1 := liveHeap()
	res.Heap = heap1 - min(heap0, heap1)
	res.Goroutines = runtime.NumGoroutine() - g0 - waiters + int(served.Load()+failed.Load())

	start := time.Now()
	relErr := parallelFor(len(h.held), func(i int) error { return h.held[i].Unlock(ctx) })
	h.c.Close()
	h.cancel()
	drained := make(chan struct{})
	go func() {
		done.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(timeout):
		res.TimedOut = true
		cancel()
		<-drained
	}
	res.Drain = time.Since(start)
	res.Served, res.Failed = int(served.Load()), int(failed.Load())
	return res, relErr
}

// connectedClients returns the server's connected_clients.
func connectedClients(ctx context.Context, admin rueidis.Client) (int, error) {
	info, err := admin.Do(ctx, admin.B().Info().Section("clients").Build()).ToString()
	if err != nil {
		return 0, err
	}
	return infoInt(info, "connected_clients")
}
