package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// acquireWorkers is how many goroutines take or release many locks at once
// (scenarios 5, 6 and 7); the cost of the setup is not what is measured.
const acquireWorkers = 64

// AllocResult is scenario 6's first half: the allocations of one
// uncontended Lock+Unlock pair, counted process-wide (so the client
// library's background goroutines count too), as go test -benchmem does.
type AllocResult struct {
	Allocs float64 // heap allocations per pair
	Bytes  float64 // heap bytes allocated per pair
}

// AllocsPerPair locks and unlocks one name n times and counts allocations.
func AllocsPerPair(ctx context.Context, p Peer, addr string, n int) (AllocResult, error) {
	cs, err := connectAll(p, addr, 1)
	if err != nil {
		return AllocResult{}, err
	}
	defer closeAll(cs)
	m := cs[0].NewMutex(lockName(p, "allocs", 0))
	for range warmup {
		if err := pair(ctx, m); err != nil {
			return AllocResult{}, err
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		if err := pair(ctx, m); err != nil {
			return AllocResult{}, err
		}
	}
	runtime.ReadMemStats(&after)
	return AllocResult{
		Allocs: float64(after.Mallocs-before.Mallocs) / float64(n),
		Bytes:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
	}, nil
}

// HoldResult is scenario 6's second half: what n held locks cost in the
// holding process, after a garbage collection.
type HoldResult struct {
	Locks       int
	HeapPerLock float64 // live heap bytes per held lock (handle included)
	// GoroutinesPerLock counts the library's goroutines per held lock; their
	// stacks (at least 2 KiB each) are not part of the heap figure.
	GoroutinesPerLock float64
}

// holding is a set of locks one Client holds.
type holding struct {
	c     Client
	held  []Held
	names []string
	// cancel ends the context the locks were taken with (rueidislock
	// releases a lock when that context ends).
	cancel context.CancelFunc
}

// release unlocks every hold and closes the Client.
func (h *holding) release(ctx context.Context) error {
	defer h.cancel()
	defer h.c.Close()
	return parallelFor(len(h.held), func(i int) error {
		if h.held[i] == nil {
			return nil
		}
		return h.held[i].Unlock(ctx)
	})
}

// holdTimeout bounds how long taking the locks of holdMany may take. It
// normally takes well under a second; rueidislock has been seen to leave a
// Lock waiting forever here (see the report).
const holdTimeout = 20 * time.Second

// holdMany connects a Client of p and takes n locks through it, one handle
// per name, measuring the heap and goroutines they add. The caller releases
// them.
func holdMany(ctx context.Context, p Peer, addr, scenario string, n int) (*holding, HoldResult, error) {
	c, err := p.Connect(addr)
	if err != nil {
		return nil, HoldResult{}, fmt.Errorf("%s: connect: %w", p.Name, err)
	}
	// The holds outlive the acquisition, so the context must too: it is
	// cancelled by the timer only if the acquisition overruns.
	holdCtx, cancel := context.WithCancel(ctx)
	overrun := time.AfterFunc(holdTimeout, cancel)
	h := &holding{c: c, held: make([]Held, n), names: make([]string, n), cancel: cancel}
	for i := range n {
		h.names[i] = lockName(p, scenario, i)
	}
	// Dial and load scripts outside the measurement.
	if err := pair(holdCtx, c.NewMutex(lockName(p, scenario, -1))); err != nil {
		cancel()
		c.Close()
		return nil, HoldResult{}, err
	}
	before, g0 := liveHeap(), runtime.NumGoroutine()
	err = parallelFor(n, func(i int) error {
		var err error
		h.held[i], err = c.NewMutex(h.names[i]).Lock(holdCtx)
		return err
	})
	if !overrun.Stop() {
		err = errors.Join(err, fmt.Errorf("taking %d locks took over %v", n, holdTimeout))
	}
	if err != nil {
		return nil, HoldResult{}, errors.Join(err, h.release(ctx))
	}
	after, g1 := liveHeap(), runtime.NumGoroutine()
	return h, HoldResult{
		Locks:             n,
		HeapPerLock:       (float64(after) - float64(before)) / float64(n),
		GoroutinesPerLock: float64(g1-g0) / float64(n),
	}, nil
}

// HeldLocks measures what n held locks of p cost, then releases them.
func HeldLocks(ctx context.Context, p Peer, addr string, n int) (HoldResult, error) {
	h, res, err := holdMany(ctx, p, addr, "held", n)
	if err != nil {
		return HoldResult{}, err
	}
	return res, h.release(ctx)
}

// liveHeap collects garbage and returns the live heap in bytes.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// parallelFor runs f(0..n-1) on acquireWorkers goroutines and returns the
// first error; after an error the remaining indexes are skipped.
func parallelFor(n int, f func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range min(n, acquireWorkers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// RenewalWatchdog is the watchdog timeout of scenario 5: renewals every 1 s.
const RenewalWatchdog = 3 * time.Second

// RenewalResult is scenario 5: the cost of keeping n watchdog locks alive.
type RenewalResult struct {
	Held       HoldResult
	Window     time.Duration
	CallsPerS  float64 // script calls (EVALSHA+EVAL) per second on the server
	ClientCPU  float64 // the benchmark process's CPU, percent of one core
	ServerCPU  float64 // redis-server's CPU, percent of one core
	Renewed    bool    // every lock was still held after the window
	Goroutines int     // the process's goroutines while the locks were held
}

// Renewal is scenario 5 (and redisync's half of scenario 6): n redisync
// Mutexes are held in watchdog mode with RenewalWatchdog for window, while
// the server counts script calls and both sides' CPU is measured.
func Renewal(ctx context.Context, addr string, admin rueidis.Client, n int, window time.Duration) (RenewalResult, error) {
	p := Redisync(redisync.WithWatchdogTimeout(RenewalWatchdog))
	h, held, err := holdMany(ctx, p, addr, "renewal", n)
	if err != nil {
		return RenewalResult{}, err
	}
	res := RenewalResult{Held: held, Window: window, Goroutines: runtime.NumGoroutine()}
	calls0, cpu0, err := serverCounters(ctx, admin)
	if err != nil {
		return res, errors.Join(err, h.release(ctx))
	}
	self0, start := ProcessCPU(), time.Now()
	time.Sleep(window)
	calls1, cpu1, err := serverCounters(ctx, admin)
	elapsed := time.Since(start).Seconds()
	self1 := ProcessCPU()
	if err != nil {
		return res, errors.Join(err, h.release(ctx))
	}
	res.CallsPerS = float64(calls1-calls0) / elapsed
	res.ServerCPU = 100 * (cpu1 - cpu0) / elapsed
	res.ClientCPU = 100 * (self1 - self0).Seconds() / elapsed
	// A lost lock would make its Unlock fail: the release checks the
	// renewals kept every lock.
	err = h.release(ctx)
	res.Renewed = err == nil
	return res, err
}

// ProcessCPU returns the user+system CPU time this process has used.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
