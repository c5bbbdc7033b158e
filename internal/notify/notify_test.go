package notify_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/notify"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

var target *redisserver.Target

func TestMain(m *testing.M) { redistest.Main(m, &target) }

// policy is Redisson's, "1" wakes all and anything else one, plus a test of
// targeted wake-ups: "tag:X" wakes the waiter tagged X.
func policy(msg string) notify.Wake {
	if tag, ok := strings.CutPrefix(msg, "tag:"); ok {
		return notify.Wake{Tag: tag}
	}
	return notify.Redisson(msg)
}

func newRegistry(t *testing.T) (*notify.Registry, rueidis.Client) {
	t.Helper()
	rc, err := target.NewClient()
	require.NoError(t, err)
	r := notify.New(rc, false, slog.Default())
	t.Cleanup(func() {
		r.Close()
		rc.Close()
	})
	return r, rc
}

const wait = 5 * time.Second // generous: only catches hangs

func ready(t *testing.T, w *notify.Waiter) {
	t.Helper()
	select {
	case <-w.Ready():
	case <-time.After(wait):
		t.Fatal("subscription not confirmed")
	}
}

func woken(w *notify.Waiter, within time.Duration) bool {
	select {
	case <-w.Wake():
		return true
	case <-time.After(within):
		return false
	}
}

func publish(t *testing.T, rc rueidis.Client, ch, msg string) {
	t.Helper()
	require.NoError(t, rc.Do(context.Background(), rc.B().Publish().Channel(ch).Message(msg).Build()).Error())
}

func numsub(rc rueidis.Client, ch string) int64 {
	m, err := rc.Do(context.Background(), rc.B().PubsubNumsub().Channel(ch).Build()).AsIntMap()
	if err != nil {
		return -1
	}
	return m[ch]
}

func TestMessagesWakeByPolicy(t *testing.T) {
	r, rc := newRegistry(t)
	ch := t.Name()
	a, b := r.Join(ch, policy, ""), r.Join(ch, policy, "")
	ready(t, a)
	ready(t, b)
	assert.EqualValues(t, 1, numsub(rc, ch), "two waiters share one subscription")

	publish(t, rc, ch, "0")
	assert.True(t, woken(a, wait), "the oldest waiter is woken by a release")
	assert.False(t, woken(b, 100*time.Millisecond), "a release wakes one waiter only")

	publish(t, rc, ch, "1")
	assert.True(t, woken(a, wait))
	assert.True(t, woken(b, wait), "a wake-all message wakes every waiter")

	r.WakeOne(ch)
	assert.True(t, woken(a, wait), "a local wake reaches a waiter without Redis")
	a.Leave(false)
	b.Leave(false)
	assert.EqualValues(t, 1, numsub(rc, ch), "the subscription lingers a moment")
	assert.Eventually(t, func() bool { return numsub(rc, ch) == 0 }, wait, 10*time.Millisecond,
		"the channel is unsubscribed when its last waiter has left")
	assert.Zero(t, r.Subscribed())
}

func TestTaggedWake(t *testing.T) {
	r, rc := newRegistry(t)
	ch := t.Name()
	a, b := r.Join(ch, policy, "a"), r.Join(ch, policy, "b")
	ready(t, a)
	publish(t, rc, ch, "tag:b")
	assert.True(t, woken(b, wait), "the tagged waiter is woken")
	assert.False(t, woken(a, 100*time.Millisecond), "a message for b must not wake a")
	r.WakeTag(ch, "a")
	assert.True(t, woken(a, wait))
	assert.False(t, woken(b, 100*time.Millisecond))
	a.Leave(false)
	b.Leave(false)
}

func TestLeavePassesWakeOn(t *testing.T) {
	r, rc := newRegistry(t)
	ch := t.Name()
	a, b := r.Join(ch, policy, ""), r.Join(ch, policy, "")
	ready(t, a)
	publish(t, rc, ch, "0")
	require.True(t, woken(a, wait))
	a.Leave(true) // gave up after taking the wake-up
	assert.True(t, woken(b, wait), "a waiter that gives up passes its wake-up on")
	b.Leave(false)
}

func TestResubscribeWakesEveryWaiter(t *testing.T) {
	if !target.Real() {
		t.Skip("miniredis has no CLIENT KILL; " + redisserver.InstallHint)
	}
	r, rc := newRegistry(t)
	ch := t.Name()
	a, b := r.Join(ch, policy, ""), r.Join(ch, policy, "")
	ready(t, a)
	require.Positive(t, redistest.KillSubscribers(t, target), "no subscriber connection to kill")
	assert.True(t, woken(a, wait), "resubscription wakes waiters to re-check")
	assert.True(t, woken(b, wait))
	assert.Eventually(t, func() bool { return numsub(rc, ch) == 1 }, wait, 10*time.Millisecond)
	publish(t, rc, ch, "0")
	assert.True(t, woken(a, wait), "messages arrive again after the resubscription")
	a.Leave(false)
	b.Leave(false)
}

func TestRejoinAfterLeave(t *testing.T) {
	r, rc := newRegistry(t)
	ch := t.Name()
	for range 20 {
		w := r.Join(ch, policy, "")
		ready(t, w)
		w.Leave(false)
	}
	w := r.Join(ch, policy, "")
	ready(t, w)
	// An earlier subscriber's UNSUBSCRIBE may cross this SUBSCRIBE; the
	// registry then subscribes again. Let that settle, then drop the wake-up it
	// caused, so that only the message can wake w below.
	time.Sleep(200 * time.Millisecond)
	require.Eventually(t, func() bool { return numsub(rc, ch) == 1 }, wait, 10*time.Millisecond)
	select {
	case <-w.Wake():
	default:
	}
	publish(t, rc, ch, "0")
	assert.True(t, woken(w, wait), "a waiter joining right after a leave still gets messages")
	w.Leave(false)
	assert.Eventually(t, func() bool { return numsub(rc, ch) == 0 }, wait, 10*time.Millisecond)

	// Join again while the expired subscription is being unsubscribed: the
	// new one waits for that, so the UNSUBSCRIBE cannot cancel it.
	for range 5 {
		w = r.Join(ch, policy, "")
		ready(t, w)
		w.Leave(false)
		time.Sleep(notify.Linger)
	}
	w = r.Join(ch, policy, "")
	ready(t, w)
	time.Sleep(100 * time.Millisecond)
	select {
	case <-w.Wake():
		t.Error("a fresh subscription was cancelled and resubscribed")
	default:
	}
	publish(t, rc, ch, "0")
	assert.True(t, woken(w, wait))
	w.Leave(false)
}

func TestCloseWakesWaiters(t *testing.T) {
	rc, err := target.NewClient()
	require.NoError(t, err)
	defer rc.Close()
	r := notify.New(rc, false, slog.Default())
	w := r.Join(t.Name(), policy, "")
	ready(t, w)
	r.Close()
	assert.True(t, woken(w, wait))
	w.Leave(false)
}

// The policies turn messages into wake-ups as their docs say.
func TestPolicies(t *testing.T) {
	assert.Equal(t, notify.Wake{N: notify.WakeAll}, notify.Redisson("1"))
	assert.Equal(t, notify.Wake{N: 1}, notify.Redisson("0"))
	assert.Equal(t, notify.Wake{N: notify.WakeAll}, notify.All("0"), "an RWMutex's 0 wakes every waiter")
	assert.Equal(t, notify.Wake{N: notify.WakeAll}, notify.All("1"))
	assert.Equal(t, notify.Wake{Tag: "w1"}, notify.Tagged("w1"))
	assert.Equal(t, notify.Wake{N: 1}, notify.Handover("0"), "Redisson's unlock message wakes one")
	assert.Equal(t, notify.Wake{N: notify.WakeAll}, notify.Handover("1"))
	assert.Equal(t, notify.Wake{Tag: "1796175786876433", Echo: true}, notify.Handover("1796175786876433"),
		"a place number names its waiter, and the release echoes it for the others")
}

// A waiter knows that a wake-up named it, even one that came while another
// wake-up was pending, and forgets it when asked or given another tag.
func TestNamedWake(t *testing.T) {
	r, rc := newRegistry(t)
	ch := t.Name()
	a, b := r.Join(ch, notify.Handover, "7"), r.Join(ch, notify.Handover, "8")
	ready(t, a)
	publish(t, rc, ch, "0")
	require.True(t, woken(a, wait))
	assert.False(t, a.Named(), "an unlock message names nobody")
	r.WakeOne(ch) // a's wake-up is pending...
	publish(t, rc, ch, "7")
	assert.Eventually(t, a.Named, wait, time.Millisecond, "...and the message naming a still counts")
	assert.True(t, woken(a, wait))
	assert.False(t, a.Named(), "Named forgets once it has told")
	assert.False(t, woken(b, 100*time.Millisecond), "a message for a does not wake b")
	b.Retag("9")
	r.WakeTag(ch, "8")
	assert.False(t, woken(b, 100*time.Millisecond), "nor does one for b's old tag")
	assert.False(t, b.Named())
	assert.True(t, r.WakeTag(ch, "9"))
	assert.True(t, woken(b, wait))
	assert.True(t, b.Named())

	// A wake-up that names a tag before its waiter has it waits for it.
	assert.False(t, r.WakeTag(ch, "10"), "nobody has tag 10 yet")
	publish(t, rc, ch, "11")
	publish(t, rc, ch, "0") // the echo a release sends after a place number: for waiters without a tag
	publish(t, rc, ch, "0") // messages of a channel come in order: once a is woken by it, "11" came
	require.True(t, woken(a, wait))
	assert.False(t, a.Named())
	b.Retag("10")
	assert.True(t, woken(b, wait), "the waiter that takes the tag is woken")
	assert.True(t, b.Named())
	c := r.Join(ch, notify.Handover, "11")
	assert.True(t, woken(c, wait), "as is one that joins with it")
	assert.True(t, c.Named())
	b.Retag("10")
	assert.False(t, woken(b, 100*time.Millisecond), "a kept wake-up is claimed once")
	a.Leave(false)
	b.Leave(false)
	c.Leave(false)
}

// A "0" that follows a place number on a Mutex's channel is the release's
// echo for the waiters that are not queued: it wakes one of them, not a
// queued (tagged) waiter; the next "0" is Redisson's unlock message again.
func TestHandoverEcho(t *testing.T) {
	r, rc := newRegistry(t)
	ch := t.Name()
	queued, plain := r.Join(ch, notify.Handover, "7"), r.Join(ch, notify.Handover, "")
	ready(t, queued)
	publish(t, rc, ch, "5") // handed to a waiter of another process
	publish(t, rc, ch, "0")
	assert.True(t, woken(plain, wait), "the echo wakes a waiter that is not queued")
	assert.False(t, woken(queued, 100*time.Millisecond), "not the queued one")
	publish(t, rc, ch, "0") // a release with nobody queued
	assert.True(t, woken(queued, wait), "an unlock message wakes the longest waiting")
	queued.Leave(false)
	plain.Leave(false)
}

// OnMessage sees each message before any waiter wakes on it.
func TestOnMessage(t *testing.T) {
	rc, err := target.NewClient()
	require.NoError(t, err)
	defer rc.Close()
	var seen atomic.Value
	r := notify.New(rc, false, slog.Default(), notify.OnMessage(func(channel, message string) {
		seen.Store(channel + "=" + message)
	}))
	defer r.Close()
	ch := t.Name()
	w := r.Join(ch, policy, "")
	ready(t, w)
	publish(t, rc, ch, "0")
	require.True(t, woken(w, wait))
	assert.Equal(t, ch+"=0", seen.Load(), "told before the waiter woke")
	w.Leave(false)
}

// A Registry over several servers (a quorum's): a channel is subscribed on
// each, a message on any of them wakes its waiters, and a resubscription on
// one wakes them all; the subscriptions end on every server with the last
// waiter.
func TestRegistryOverServers(t *testing.T) {
	var rcs, others []rueidis.Client // the registry's clients, and others of the same servers
	for _, s := range redistest.Servers(t, 3) {
		for _, list := range []*[]rueidis.Client{&rcs, &others} {
			rc, err := rueidis.NewClient(redistest.Option(s.Addr))
			require.NoError(t, err)
			t.Cleanup(rc.Close)
			*list = append(*list, rc)
		}
	}
	var again atomic.Int32
	r := notify.NewOver(rcs, false, slog.Default(), notify.OnSubscribe(func(_ string, resub bool) {
		if resub {
			again.Add(1)
		}
	}))
	defer r.Close()
	ctx := context.Background()
	name := t.Name()
	subscribers := func(rc rueidis.Client) int64 {
		v, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(name).Build()).AsMap()
		require.NoError(t, err)
		m := v[name]
		n, _ := m.AsInt64()
		return n
	}
	w := r.Join(name, notify.All, "")
	ready(t, w)
	require.Eventually(t, func() bool {
		for _, rc := range others {
			if subscribers(rc) != 1 {
				return false
			}
		}
		return true
	}, wait, 5*time.Millisecond, "subscribed on every server")
	for i, rc := range others {
		require.NoError(t, rc.Do(ctx, rc.B().Publish().Channel(name).Message("0").Build()).Error())
		assert.True(t, woken(w, wait), "a message on server %d wakes the waiter", i)
		assert.Equal(t, notify.FromMessage, w.Source())
	}
	assert.Zero(t, again.Load(), "a server's first confirmation is no resubscription")

	killed, err := others[1].Do(ctx, others[1].B().ClientKill().TypePubsub().Build()).AsInt64()
	require.NoError(t, err)
	require.EqualValues(t, 1, killed, "the subscriber connection to server 1")
	assert.True(t, woken(w, wait), "a resubscription on one server wakes the waiters")
	assert.Equal(t, notify.FromResubscribe, w.Source())

	w.Leave(false)
	require.Eventually(t, func() bool {
		for _, rc := range others {
			if subscribers(rc) != 0 {
				return false
			}
		}
		return true
	}, wait+notify.Linger, 10*time.Millisecond, "unsubscribed on every server after the linger")
}
