package redisynctest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/redisynctest"
)

// A test of code that takes a lock: the Client is on a server of the test's
// own, gone when the test ends.
func ExampleNew() {
	_ = func(t *testing.T) {
		c := redisynctest.New(t)
		m := c.NewMutex("orders:42")
		if err := m.LockContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer m.Unlock()
		// … the code under test, inside the critical section …
	}
}

// Tests that run in parallel share one server, each in a database of its
// own.
func ExampleShared() {
	_ = func(t *testing.T) {
		t.Parallel()
		c := redisynctest.New(t, redisynctest.Shared())
		_ = c.NewMutex("orders:42") // no other test's lock, whatever its name
	}
}

// A short watchdog timeout, so that a lost hold is noticed within a second.
func ExampleWithOptions() {
	_ = func(t *testing.T) {
		c := redisynctest.New(t, redisynctest.WithOptions(redisync.WithWatchdogTimeout(900*time.Millisecond)))
		_ = c
	}
}

// Another process of the service, competing for the same lock.
func ExampleAnother() {
	_ = func(t *testing.T) {
		ctx := context.Background()
		c := redisynctest.New(t)
		_ = c.NewMutex("jobs:nightly").LockContext(ctx)
		ok, _ := redisynctest.Another(t, c).NewMutex("jobs:nightly").TryLockContext(ctx)
		if ok {
			t.Error("two processes ran the nightly job")
		}
	}
}

// What the lock looks like in Redis.
func ExampleRueidis() {
	_ = func(t *testing.T) {
		ctx := context.Background()
		c := redisynctest.New(t)
		_ = c.NewMutex("orders:42").LockContext(ctx)
		rc := redisynctest.Rueidis(t, c)
		ttl, _ := rc.Do(ctx, rc.B().Pttl().Key("orders:42").Build()).AsInt64()
		t.Logf("the lock expires in %d ms unless renewed", ttl)
	}
}

// The service must stop its work when its lock vanishes (a Redis restart).
func ExampleVanish() {
	_ = func(t *testing.T) {
		c := redisynctest.New(t, redisynctest.WithOptions(redisync.WithWatchdogTimeout(900*time.Millisecond)))
		m := c.NewMutex("payments:7")
		_ = m.LockContext(context.Background())
		redisynctest.Vanish(t, c)
		select {
		case <-m.Done(): // what the service watches to stop
		case <-time.After(5 * time.Second):
			t.Fatal("the loss was not reported")
		}
	}
}

// A holder that stalls past its lease (a long GC pause, a partition): the
// lock goes to another process, and the holder is told.
func ExamplePauseRenewals() {
	_ = func(t *testing.T) {
		ctx := context.Background()
		c := redisynctest.New(t, redisynctest.WithOptions(redisync.WithWatchdogTimeout(900*time.Millisecond)))
		m := c.NewMutex("migration")
		_ = m.LockContext(ctx)
		resume := redisynctest.PauseRenewals(t, c)
		if err := redisynctest.Another(t, c).NewMutex("migration").LockContext(ctx); err != nil {
			t.Fatal(err)
		}
		<-m.Done()
		resume()
	}
}
