package redisync_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/scripts"
)

// ForceUnlock through the holder's own Client ends the hold it deletes even
// when that hold is still being recorded (its acquire's reply on its way to
// the caller): a caller that gets the lock either holds it in Redis or sees
// it lost, never an Err of nil for a lock Redis no longer has, which a rival
// could take. The acquisition and the force unlock race in every round; an
// engine that ends only the holds already recorded fails within a few
// dozen rounds.
func TestForceUnlockCatchesHoldsBeingRecorded(t *testing.T) {
	ctx := context.Background()
	c, rc := newClient(t, standalone)
	exists := func(key string) bool {
		n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
		require.NoError(t, err)
		return n == 1
	}
	// Each kind acquires name, waits for forced (closed once the rival
	// ForceUnlock returned) and reports whether its hold ended and whether
	// Redis still has it, then releases.
	kinds := []struct {
		name    string
		acquire func(name string, forced <-chan struct{}) (got, ended, inRedis bool)
		force   func(name string) error
	}{
		{"Mutex", func(name string, forced <-chan struct{}) (bool, bool, bool) {
			m := c.NewMutex(name)
			if !m.TryLock() {
				return false, false, false
			}
			defer m.Unlock()
			<-forced
			return true, m.Err() != nil, exists(name)
		}, func(name string) error { _, err := c.NewMutex(name).ForceUnlock(ctx); return err }},
		{"Election", func(name string, forced <-chan struct{}) (bool, bool, bool) {
			e := c.NewElection(name)
			require.NoError(t, e.Campaign(ctx, "v"))
			defer func() { _ = e.Resign(ctx) }()
			<-forced
			return true, e.Err() != nil, exists(layout.ElectionOf(name).Key)
		}, func(name string) error { _, err := c.NewElection(name).ForceUnlock(ctx); return err }},
		{"Once", func(name string, forced <-chan struct{}) (got, ended, inRedis bool) {
			err := c.NewOnce(name).Do(ctx, func(fctx context.Context) error {
				<-forced
				got, ended, inRedis = true, fctx.Err() != nil, exists(layout.OnceOf(name).Claim)
				return nil
			})
			require.NoError(t, err)
			return got, ended, inRedis
		}, func(name string) error { _, err := c.NewOnce(name).ForceUnlock(ctx); return err }},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			var lost, held int
			base := freshName(t) + ":" // a Once is done for good
			for round := range 300 {
				name := base + strconv.Itoa(round)
				start, forced := make(chan struct{}), make(chan struct{})
				var got, ended, inRedis bool
				var wg sync.WaitGroup
				wg.Go(func() {
					<-start
					got, ended, inRedis = kind.acquire(name, forced)
				})
				wg.Go(func() {
					<-start
					assert.NoError(t, kind.force(name))
					close(forced)
				})
				close(start)
				wg.Wait()
				switch {
				case !got:
				case ended:
					lost++
				case !inRedis:
					t.Fatalf("round %d: the caller holds a %s that ForceUnlock deleted, and its Err is nil", round, kind.name)
				default:
					held++
				}
			}
			t.Logf("%d holds deleted and reported lost, %d taken after the force", lost, held)
			assert.Positive(t, lost+held, "no round took the lock")
		})
	}
}

// The same for a hold handed over by a release in Redis: the waiter's own
// Client force-unlocks the lock as the release hands it to the waiter.
func TestForceUnlockCatchesHandedHolds(t *testing.T) {
	ctx := context.Background()
	holder, _ := newClient(t, standalone)
	c, rc := newClient(t, standalone)
	base := freshName(t) + ":"
	var lost, held int
	for round := range 60 {
		name := base + strconv.Itoa(round)
		h, w := holder.NewMutex(name), c.NewMutex(name)
		require.NoError(t, h.LockContext(ctx))
		got := inBackground(w.LockContext)
		waitMutexQueued(t, rc, name, 1)
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { <-start; h.Unlock() })
		wg.Go(func() {
			<-start
			_, err := c.NewMutex(name).ForceUnlock(ctx)
			assert.NoError(t, err)
		})
		close(start)
		wg.Wait()
		if err := <-got; err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		n, err := rc.Do(ctx, rc.B().Exists().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		switch {
		case w.Err() != nil:
			lost++
		case n == 0:
			t.Fatalf("round %d: the waiter holds a Mutex that ForceUnlock deleted, and its Err is nil", round)
		default:
			held++
		}
		w.Unlock()
	}
	t.Logf("%d handed holds deleted and reported lost, %d taken after the force", lost, held)
}

// ForceUnlock ends the holds whose entries it deleted, not a hold taken right
// after it by a waiter its own message woke.
func TestForceUnlockSparesLaterHold(t *testing.T) {
	c, late := newLateClient(t, standalone)
	warmUp(t, c)
	name := freshName(t)
	for _, tc := range []struct {
		name   string
		script *scripts.Script
		a, b   interface {
			Lock()
			Unlock()
			LockContext(context.Context) error
			ForceUnlock(context.Context) (bool, error)
			Done() <-chan struct{}
			Err() error
		}
	}{
		{"Mutex", scripts.MutexForceUnlock, c.NewMutex(name + ":mutex"), c.NewMutex(name + ":mutex")},
		{"FairMutex", scripts.FairForceUnlock, c.NewFairMutex(name + ":fair"), c.NewFairMutex(name + ":fair")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.Lock()
			got := make(chan error, 1)
			go func() { got <- tc.b.LockContext(context.Background()) }()
			time.Sleep(100 * time.Millisecond) // b waits
			late.DelayReply(tc.script, 1)
			forced := make(chan bool, 1)
			go func() {
				ok, err := tc.a.ForceUnlock(context.Background())
				assert.NoError(t, err)
				forced <- ok
			}()
			select {
			case err := <-got: // woken by the force unlock's own message
				require.NoError(t, err)
			case <-time.After(hang):
				t.Fatal("the waiter was not woken")
			}
			late.Deliver(t)
			assert.True(t, <-forced)
			assert.ErrorIs(t, tc.a.Err(), redisync.ErrLockLost, "the forced hold")
			assert.ErrorIs(t, tc.a.Err(), redisync.ErrForceUnlocked, "the loss's cause")
			assert.NoError(t, tc.b.Err(), "the hold taken after the force unlock was ended by it")
			select {
			case <-tc.b.Done():
				t.Error("the later hold's Done is closed")
			default:
			}
			tc.a.Unlock() // acknowledges the loss
			tc.b.Unlock()
		})
	}
}

// gatedOwnChannel is a rueidis client whose subscriptions to a redisync
// Client's own channel (where a force unlock tells it of the holds it took
// away) wait until open is closed: a Client whose Pub/Sub is slow to
// confirm.
type gatedOwnChannel struct {
	rueidis.Client
	open chan struct{}
}

func (g gatedOwnChannel) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	if slices.ContainsFunc(subscribe.Commands(), func(s string) bool { return strings.HasPrefix(s, layout.ClientChannelPrefix) }) {
		select {
		case <-g.open:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Client.Receive(ctx, subscribe, fn)
}

// A force unlock right after a Client's first hold is heard, though the
// Client subscribes to its own channel in the background from New: its
// first calls wait for that subscription (a bounded wait). When the
// subscription comes later still (after the wait gave up, and after the
// force unlock), its confirmation renews every hold at once, which finds
// the hold gone: the holder learns then, not at its next renewal (20 s
// away with this lease).
func TestForceUnlockBeforeTheHolderListens(t *testing.T) {
	forEachTopology(t, func(t *testing.T, tg *redisserver.Target) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		other, _ := newClient(t, tg)
		gated := func(t *testing.T) (*redisync.Client, chan struct{}) {
			g := gatedOwnChannel{Client: newRueidis(t, tg), open: make(chan struct{})}
			c, err := redisync.New(g, redisync.WithLogger(testLogger(t)), redisync.WithWatchdogTimeout(time.Minute))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			return c, g.open
		}

		t.Run("first hold waits for the subscription", func(t *testing.T) {
			holder, open := gated(t)
			m := holder.NewMutex(freshName(t))
			locked := make(chan error, 1)
			go func() { locked <- m.LockContext(ctx) }()
			select {
			case err := <-locked:
				t.Fatalf("the first Lock returned (%v) before the Client's own channel was subscribed", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(open)
			require.NoError(t, <-locked)
			work := m.Context(ctx)
			_, err := other.NewMutex(m.Name()).ForceUnlock(ctx)
			require.NoError(t, err)
			assert.ErrorIs(t, toldWithin(t, work, 5*time.Second, "of the force unlock"), redisync.ErrForceUnlocked)
		})

		t.Run("a late subscription finds what it missed", func(t *testing.T) {
			holder, open := gated(t)
			m := holder.NewMutex(freshName(t))
			require.NoError(t, m.LockContext(ctx), "a Client whose own channel never confirms still locks")
			work := m.Context(ctx)
			_, err := other.NewMutex(m.Name()).ForceUnlock(ctx)
			require.NoError(t, err)
			close(open)
			cause := toldWithin(t, work, 5*time.Second, "when its subscription came")
			assert.ErrorIs(t, cause, redisync.ErrLockLost)
			assert.ErrorIs(t, cause, redisync.ErrHoldGone, "found by the renewal the confirmation made")
		})
	})
}
