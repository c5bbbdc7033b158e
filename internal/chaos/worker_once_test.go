package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/go-redisync/redisync"
)

// errRunFailed is what a Once slot's function returns when it fails on
// purpose.
var errRunFailed = errors.New("the function failed on purpose")

// driveOnce runs a Once slot until the worker stops: now and then a Reset,
// then a Do whose function is recorded like a critical section (acquired,
// entered, exited; parked there when asked) and fails one time in four. A Do
// that finds the function done records Finished.
func (w *worker) driveOnce(s *slot) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(s.g)))
	base := context.WithValue(context.Background(), slotKey{}, s)
	for !w.stop.Load() {
		if rng.IntN(3) == 0 {
			w.emit(Event{G: s.g, K: ResetCall, R: s.res})
			ctx, cancel := context.WithTimeout(base, waitLimit)
			e := Event{G: s.g, K: Reset, R: s.res}
			if err := s.once.Reset(ctx); err != nil {
				e.Err = err.Error() // it may have run: a reply lost with its connection
			}
			cancel()
			w.emit(e)
		}
		lockLimit, _ := limits(rng)
		fail := rng.IntN(4) == 0
		section := time.Duration(200+rng.IntN(2800)) * time.Microsecond
		w.emit(Event{G: s.g, K: Invoke, R: s.res, Mode: s.mode, D: int64(lockLimit)})
		var exit int64
		ctx, cancel := context.WithTimeout(base, lockLimit)
		err := s.once.Do(ctx, func(context.Context) error {
			w.emit(Event{G: s.g, K: Acquired, R: s.res, Mode: s.mode})
			w.emit(Event{G: s.g, K: Enter, R: s.res, Mode: s.mode})
			if s.park.CompareAndSwap(true, false) {
				w.parked(s)
			} else {
				time.Sleep(section)
			}
			if !fail {
				w.emit(Event{G: s.g, K: Completed, R: s.res})
			}
			w.emit(Event{G: s.g, K: Exit, R: s.res, Mode: s.mode})
			exit = Now()
			if fail {
				return errRunFailed
			}
			return nil
		})
		cancel()
		switch {
		case exit != 0:
			e := Event{T0: exit, G: s.g, K: Released, R: s.res, Mode: s.mode}
			if err != nil && !errors.Is(err, errRunFailed) {
				e.Err = err.Error() // the success was perhaps not recorded
			}
			w.emit(e)
		case err == nil:
			w.emit(Event{G: s.g, K: Finished, R: s.res, Mode: s.mode})
		default:
			w.emit(Event{G: s.g, K: AcquireFailed, R: s.res, Mode: s.mode, Err: err.Error()})
		}
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}
}

// waitGroupEpoch is how long the workers share one WaitGroup name: a worker
// killed in a round leaves that name's counter up for good (the WaitGroup's
// documented crash case), and the others' Waits on it give up after
// waitGroupWait, until the next epoch's name.
const (
	waitGroupEpoch = 3 * time.Second
	waitGroupWait  = 5 * time.Second
)

// driveWaitGroup runs rounds on a WaitGroup that every worker shares until
// the worker stops: Add(2), two Dones a few milliseconds later from
// goroutines of their own (numbers g+1 and g+2), and a Wait (goroutine g)
// that returns once every worker's pending Dones are in. The name is the
// epoch's (see waitGroupEpoch), the same for all since Now is the machine's.
func (w *worker) driveWaitGroup(g int) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(g)))
	for !w.stop.Load() {
		name := waitGroupName + ":" + strconv.FormatInt(Now()/int64(waitGroupEpoch), 10)
		wg := w.client.NewWaitGroup(name)
		w.add(wg, g, 2)
		var dones sync.WaitGroup
		for i := range 2 {
			delay := time.Duration(rng.IntN(5000)) * time.Microsecond
			dones.Go(func() {
				time.Sleep(delay)
				w.add(wg, g+1+i, -1)
			})
		}
		w.emit(Event{G: g, K: Invoke, R: name, D: int64(waitGroupWait)})
		ctx, cancel := context.WithTimeout(context.Background(), waitGroupWait)
		err := wg.Wait(ctx)
		cancel()
		if err != nil {
			w.emit(Event{G: g, K: AcquireFailed, R: name, Err: err.Error()})
		} else {
			w.emit(Event{G: g, K: Finished, R: name})
		}
		dones.Wait()
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
	}
}

// add adds delta to wg from goroutine g and records it.
func (w *worker) add(wg *redisync.WaitGroup, g int, delta int64) {
	t0 := Now()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	e := Event{T0: t0, G: g, K: Add, R: wg.Name(), N: delta, D: int64(waitLimit)}
	if err := wg.Add(ctx, delta); err != nil {
		e.Err = err.Error()
	}
	w.emit(e)
}
