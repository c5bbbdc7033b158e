package scripts_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redistest"
	"github.com/go-redisync/redisync/internal/scripts"
)

// A claim is one caller's at a time; a failed run frees it for the next, a
// successful one marks the Once done (even when the claim had been lost),
// after which nothing can be claimed; a late copy of an undone claim takes
// nothing; a repeated release answers as the first.
func TestOnceClaimRelease(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.OnceOf(redistest.Name(t))
	claim := func(field string) scripts.Reply {
		rep, err := r.ClaimOnce(ctx, &l, scripts.Hold{Field: field, LeaseMS: "10000"})
		require.NoError(t, err)
		return rep
	}
	release := func(field string, succeeded, undo bool) int64 {
		rel := scripts.Release{Field: field, From: 1, Latch: "5000", Undo: undo}
		rep, err := r.ReleaseOnce(ctx, &l, &rel, succeeded)
		require.NoError(t, err)
		return rep.Status
	}
	done := func() string {
		v, err := rc.Do(ctx, rc.B().Get().Key(l.Done).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return ""
		}
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, acquired, claim("a:1"))
	busy := claim("b:1")
	assert.Equal(t, scripts.Busy, busy.Outcome)
	assert.InDelta(t, 10000, busy.Value, 1000)
	assert.Equal(t, acquired, claim("a:1"), "a retry of the same call keeps its claim")

	assert.EqualValues(t, 1, release("a:1", false, false))
	assert.Empty(t, done(), "a failed run does not complete the Once")
	assert.EqualValues(t, 1, release("a:1", false, false), "a repeat finds the latch")
	assert.Equal(t, acquired, claim("b:1"), "the next caller claims")
	assert.EqualValues(t, 1, release("b:1", true, false))
	assert.Equal(t, "b:1", done())
	assert.Equal(t, scripts.Complete, claim("c:1").Outcome)

	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(l.Done).Build()).Error()) // Reset
	assert.Nil(t, nilStatus(release("x:1", false, true)), "the undo of a claim that was never taken")
	assert.Equal(t, scripts.Refused, claim("x:1").Outcome, "a late copy of the undone claim takes nothing")

	// A run whose claim was lost (deleted here) still records its success.
	assert.Equal(t, acquired, claim("d:1"))
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(l.Claim).Build()).Error())
	assert.Nil(t, nilStatus(release("d:1", true, false)))
	assert.Equal(t, "d:1", done())
}

// nilStatus maps a release's "not there" status (-1) to nil, other statuses
// to themselves.
func nilStatus(status int64) any {
	if status == -1 {
		return nil
	}
	return status
}

// The counter goes up and down, never below zero, and the change that brings
// it to zero deletes it and publishes "0" on Redisson's channel.
func TestAddLatch(t *testing.T) {
	r, rc := newRunner(t)
	ctx := context.Background()
	l := layout.WaitGroupOf(redistest.Name(t))
	add := func(delta int64) (bool, int64) {
		ok, n, err := r.AddWaitGroup(ctx, &l, delta)
		require.NoError(t, err)
		return ok, n
	}
	ok, n := add(2)
	assert.True(t, ok)
	assert.EqualValues(t, 2, n)
	ok, n = add(-3)
	assert.False(t, ok, "below zero is refused")
	assert.EqualValues(t, 2, n, "and changes nothing")
	ok, n = add(-1)
	assert.True(t, ok)
	assert.EqualValues(t, 1, n)

	got := make(chan string, 1)
	subCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		_ = rc.Receive(subCtx, rc.B().Subscribe().Channel(l.Channel).Build(), func(m rueidis.PubSubMessage) {
			got <- m.Message
		})
	}()
	require.Eventually(t, func() bool {
		n, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(l.Channel).Build()).AsIntMap()
		return err == nil && n[l.Channel] == 1
	}, 5*time.Second, 5*time.Millisecond, "the subscription is in place")
	ok, n = add(-1)
	assert.True(t, ok)
	assert.Zero(t, n)
	select {
	case m := <-got:
		assert.Equal(t, "0", m, "Redisson's zero message")
	case <-time.After(5 * time.Second):
		t.Fatal("no message on " + l.Channel)
	}
	cancel()
	exists, err := rc.Do(ctx, rc.B().Exists().Key(l.Key).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, exists, "zero deletes the counter")

	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(l.Key).Value("x").Build()).Error())
	_, _, err = r.AddWaitGroup(ctx, &l, 1)
	assert.ErrorContains(t, err, "not an integer")
}
