package faultproxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/faultproxy"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

var target *redisserver.Target

func TestMain(m *testing.M) { redistest.Main(m, &target) }

// startProxy starts a proxy to the target; cleanup closes it and checks that
// no connection survived.
func startProxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(target.Addrs[0])
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, p.Close())
		assert.Zero(t, p.Stats().Active, "connections left open after Close")
	})
	return p
}

// newClient connects a rueidis client to addr with the target's options.
// Cleanups run last-in first-out, so a client made after its proxy is closed
// before it.
func newClient(t *testing.T, addr string) rueidis.Client {
	t.Helper()
	opt := target.ClientOption()
	opt.InitAddress = []string{addr}
	// One pipelining connection: rueidis otherwise spreads commands over up
	// to four, dialled lazily at random, and a fault set between two tests'
	// commands could then hit a new connection's handshake instead of the
	// command under test.
	opt.PipelineMultiplex = -1
	c, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// clients returns a client through a new proxy and one straight to the
// server, to see what the server did while the proxy lied to the first.
func clients(t *testing.T) (*faultproxy.Proxy, rueidis.Client, rueidis.Client) {
	p := startProxy(t)
	return p, newClient(t, p.Addr()), newClient(t, target.Addrs[0])
}

// warm runs a few commands through c, since rueidis dials its pipelining
// connection at the first command: a fault set before that would hit the
// handshake rather than the command under test.
func warm(t *testing.T, c rueidis.Client, key string) {
	t.Helper()
	for range 3 {
		require.NoError(t, set(context.Background(), c, key, "old"))
	}
}

// rawConn dials the proxy without a client library and checks that a PING
// goes through.
func rawConn(t *testing.T, p *faultproxy.Proxy) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(3*time.Second)))
	_, err = fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n")
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", string(buf[:n]))
	return conn
}

func set(ctx context.Context, c rueidis.Client, key, value string) error {
	return c.Do(ctx, c.B().Set().Key(key).Value(value).Build()).Error()
}

func get(t *testing.T, c rueidis.Client, key string) string {
	t.Helper()
	v, err := c.Do(context.Background(), c.B().Get().Key(key).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "<nil>"
	}
	require.NoError(t, err)
	return v
}

// eventuallySet retries a SET through the proxy until it succeeds: after a
// fault the client needs a moment to notice its connection is gone and dial
// again.
func eventuallySet(t *testing.T, c rueidis.Client, key, value string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return set(context.Background(), c, key, value) == nil
	}, 5*time.Second, 20*time.Millisecond, "client did not recover through the proxy")
}

func TestPassThrough(t *testing.T) {
	p, c, direct := clients(t)
	ctx := context.Background()
	require.NoError(t, set(ctx, c, "fp:pass", "v1"))
	assert.Equal(t, "v1", get(t, c, "fp:pass"))
	assert.Equal(t, "v1", get(t, direct, "fp:pass"))
	s := p.Stats()
	assert.GreaterOrEqual(t, s.Accepted, int64(1))
	assert.Positive(t, s.Active)
	assert.Positive(t, s.BytesClientToServer)
	assert.Positive(t, s.BytesServerToClient)
	assert.Zero(t, s.BytesBlackholed+s.RepliesDropped+s.Resets)
}

func TestLatency(t *testing.T) {
	p, c, _ := clients(t)
	ctx := context.Background()
	require.NoError(t, set(ctx, c, "fp:lat", "v"))
	p.SetLatency(faultproxy.ClientToServer, 60*time.Millisecond, 0)
	p.SetLatency(faultproxy.ServerToClient, 40*time.Millisecond, 30*time.Millisecond)
	// Only the lower bound is strict: a loaded machine may add any delay.
	start := time.Now()
	assert.Equal(t, "v", get(t, c, "fp:lat"))
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
}

// TestJitterKeepsOrder sends concurrent pipelined requests through heavy
// jitter: if chunks overtook one another, replies would reach the wrong
// callers and values would not match their keys.
func TestJitterKeepsOrder(t *testing.T) {
	p, c, _ := clients(t)
	ctx := context.Background()
	const n = 40
	for i := range n {
		require.NoError(t, set(ctx, c, "fp:order:"+strconv.Itoa(i), strconv.Itoa(i)))
	}
	p.SetLatency(faultproxy.Both, 5*time.Millisecond, 40*time.Millisecond)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Stagger the requests so they leave in separate chunks.
			time.Sleep(time.Duration(i) * time.Millisecond)
			v, err := c.Do(ctx, c.B().Get().Key("fp:order:"+strconv.Itoa(i)).Build()).ToString()
			assert.NoError(t, err)
			assert.Equal(t, strconv.Itoa(i), v)
		})
	}
	wg.Wait()
}

func TestBlackhole(t *testing.T) {
	p, c, direct := clients(t)
	warm(t, c, "fp:bh")
	p.Blackhole(faultproxy.ServerToClient, true)

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := set(ctx, c, "fp:bh", "new")
	require.ErrorIs(t, err, context.DeadlineExceeded, "the client must wait, not see an error")
	assert.Equal(t, "new", get(t, direct, "fp:bh"), "the server must have run the command")
	assert.Positive(t, p.Stats().BytesBlackholed)
	// Whether the connection is still open is up to rueidis, which closes
	// it on a timeout in some modes; TestBlackholeHealResets checks that
	// the proxy keeps it open.
	assert.Zero(t, p.Stats().Resets, "the proxy must not reset while blackholing")

	p.Blackhole(faultproxy.ServerToClient, false)
	eventuallySet(t, c, "fp:bh", "healed")
	assert.Equal(t, "healed", get(t, c, "fp:bh"))
}

// TestBlackholeHealResets uses a raw connection, which unlike rueidis does not
// drop a connection after a timeout: only the proxy's healing can reset it.
func TestBlackholeHealResets(t *testing.T) {
	p := startProxy(t)
	conn := rawConn(t, p)
	p.Blackhole(faultproxy.ServerToClient, true)
	_, err := fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().BytesBlackholed > 0 }, 2*time.Second, 5*time.Millisecond)

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err = conn.Read(make([]byte, 16))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a blackhole must leave the connection open and silent")

	p.Blackhole(faultproxy.ServerToClient, false)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(3*time.Second)))
	_, err = conn.Read(make([]byte, 16))
	assert.ErrorIs(t, err, syscall.ECONNRESET, "the holed connection must be reset")
	assert.Equal(t, int64(1), p.Stats().Resets)
}

func TestPauseResume(t *testing.T) {
	p, c, direct := clients(t)
	warm(t, c, "fp:pause")
	p.Pause(faultproxy.ClientToServer)

	const stall = 300 * time.Millisecond
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- set(ctx, c, "fp:pause", "new")
	}()
	time.Sleep(stall)
	assert.Equal(t, "old", get(t, direct, "fp:pause"), "a paused request must not reach the server")
	select {
	case err := <-done:
		t.Fatalf("SET returned while paused: %v", err)
	default:
	}

	p.Resume(faultproxy.ClientToServer)
	require.NoError(t, <-done)
	assert.GreaterOrEqual(t, time.Since(start), stall)
	assert.Equal(t, "new", get(t, direct, "fp:pause"))
	assert.Zero(t, p.Stats().Resets, "pausing must not cost the connection")
}

// A stalled connection holds its requests back while the others go on, so a
// request sent later on another connection overtakes one sent earlier on it.
func TestStallOne(t *testing.T) {
	p := startProxy(t)
	a, b := rawConn(t, p), rawConn(t, p) // PING answered: both open
	resume, ok := p.StallOne(faultproxy.ClientToServer)
	require.True(t, ok)
	// Each connection sets the same key: the stalled one first.
	command := func(v string) string { return "*3\r\n$3\r\nSET\r\n$9\r\nfp:stall1\r\n$1\r\n" + v + "\r\n" }
	_, err := fmt.Fprint(a, command("a"))
	require.NoError(t, err)
	_, err = fmt.Fprint(b, command("b"))
	require.NoError(t, err)
	direct := newClient(t, target.Addrs[0])
	var stalled, other net.Conn
	require.Eventually(t, func() bool {
		v := get(t, direct, "fp:stall1")
		switch v {
		case "a":
			stalled, other = b, a
		case "b":
			stalled, other = a, b
		}
		return stalled != nil
	}, 3*time.Second, 5*time.Millisecond, "neither request went through")
	buf := make([]byte, 64)
	n, err := other.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", string(buf[:n]))
	time.Sleep(100 * time.Millisecond)
	first := get(t, direct, "fp:stall1")
	resume()
	n, err = stalled.Read(buf)
	require.NoError(t, err, "the stalled request is delivered on resume")
	require.Equal(t, "+OK\r\n", string(buf[:n]))
	last := get(t, direct, "fp:stall1")
	assert.NotEqual(t, first, last, "the stalled request landed after the other one")
	assert.Zero(t, p.Stats().Resets)
}

// StallNext stalls the connection of the matching request, before it is
// delivered, until resume.
func TestStallNext(t *testing.T) {
	p := startProxy(t)
	direct := newClient(t, target.Addrs[0])
	require.NoError(t, direct.Do(context.Background(), direct.B().Del().Key("fp:stall2").Build()).Error())
	a, b := rawConn(t, p), rawConn(t, p)
	resume := p.StallNext("fp:stall2")
	_, err := fmt.Fprint(a, "*3\r\n$3\r\nSET\r\n$9\r\nfp:stall2\r\n$1\r\na\r\n")
	require.NoError(t, err)
	_, err = fmt.Fprint(b, "*1\r\n$4\r\nPING\r\n")
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := b.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", string(buf[:n]), "the other connection goes on")
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, "<nil>", get(t, direct, "fp:stall2"), "the SET was held back")
	resume()
	n, err = a.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+OK\r\n", string(buf[:n]))
	assert.Equal(t, "a", get(t, direct, "fp:stall2"))
}

// StallNextReply lets the matching request through at once and holds back
// its reply, and the replies after it on its connection, until resume.
func TestStallNextReply(t *testing.T) {
	p := startProxy(t)
	direct := newClient(t, target.Addrs[0])
	require.NoError(t, direct.Do(context.Background(), direct.B().Del().Key("fp:stall3").Build()).Error())
	a, b := rawConn(t, p), rawConn(t, p)
	resume := p.StallNextReply("SET", "fp:stall3")
	// A request with one of the strings only goes by.
	_, err := fmt.Fprint(a, "*2\r\n$3\r\nGET\r\n$9\r\nfp:stall3\r\n")
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := a.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "$-1\r\n", string(buf[:n]))
	assert.Zero(t, p.Stats().Stalled)
	_, err = fmt.Fprint(a, "*3\r\n$3\r\nSET\r\n$9\r\nfp:stall3\r\n$1\r\na\r\n*1\r\n$4\r\nPING\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return get(t, direct, "fp:stall3") == "a" }, 3*time.Second, 5*time.Millisecond,
		"the SET reached the server at once")
	assert.EqualValues(t, 1, p.Stats().Stalled)
	_, err = fmt.Fprint(b, "*1\r\n$4\r\nPING\r\n")
	require.NoError(t, err)
	n, err = b.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", string(buf[:n]), "the other connection goes on")
	require.NoError(t, a.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err = a.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the replies are held back")
	resume()
	require.NoError(t, a.SetReadDeadline(time.Now().Add(3*time.Second)))
	var got []byte
	for len(got) < len("+OK\r\n+PONG\r\n") {
		n, err = a.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.Equal(t, "+OK\r\n+PONG\r\n", string(got), "delivered in order on resume")
	assert.Zero(t, p.Stats().Resets)
}

func TestResetAll(t *testing.T) {
	p, c, _ := clients(t)
	warm(t, c, "fp:reset")
	before := p.Stats()
	// Hold replies back so the next request is in flight when reset.
	p.Pause(faultproxy.ServerToClient)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done <- set(ctx, c, "fp:reset", "new")
	}()
	require.Eventually(t, func() bool {
		return p.Stats().BytesClientToServer > before.BytesClientToServer
	}, 2*time.Second, 5*time.Millisecond, "request never reached the server")

	start := time.Now()
	p.ResetAll()
	err := <-done
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "a reset must fail the request, not time it out")
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Positive(t, p.Stats().Resets)

	p.Resume(faultproxy.ServerToClient)
	eventuallySet(t, c, "fp:reset", "after")
	assert.Greater(t, p.Stats().Accepted, before.Accepted, "the client must have reconnected")
}

// TestResetAllSendsRST checks the difference between ResetAll and CloseAll on
// a raw connection: RST makes the reader fail with ECONNRESET, FIN with EOF.
func TestResetAllSendsRST(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset func(*faultproxy.Proxy)
		want  error
	}{
		{name: "ResetAll", reset: (*faultproxy.Proxy).ResetAll, want: syscall.ECONNRESET},
		{name: "CloseAll", reset: (*faultproxy.Proxy).CloseAll, want: io.EOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t)
			conn := rawConn(t, p)
			tc.reset(p)
			_, err := conn.Read(make([]byte, 16))
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestDropNextReply(t *testing.T) {
	p, c, direct := clients(t)
	warm(t, c, "fp:drop")
	p.DropNextReply("fp:drop")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := set(ctx, c, "fp:drop", "lost-reply")
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, "lost-reply", get(t, direct, "fp:drop"), "the server must have run the command")
	assert.Equal(t, int64(1), p.Stats().RepliesDropped)

	// Only the next reply: the one after goes through.
	eventuallySet(t, c, "fp:drop", "after")
	assert.Equal(t, int64(1), p.Stats().RepliesDropped)
}

func TestDropReplies(t *testing.T) {
	p, c, direct := clients(t)
	warm(t, c, "fp:drops")
	p.DropReplies("fp:drops")
	for i := range 3 {
		v := "v" + strconv.Itoa(i)
		// The first attempt may meet the connection the previous drop
		// closed; retry until the request reaches the server, then check
		// that its reply was lost.
		require.Eventually(t, func() bool {
			err := set(context.Background(), c, "fp:drops", v)
			require.Error(t, err, "reply %d got through", i)
			return get(t, direct, "fp:drops") == v
		}, 5*time.Second, 20*time.Millisecond)
	}
	assert.Equal(t, int64(3), p.Stats().RepliesDropped)

	p.StopDropping()
	eventuallySet(t, c, "fp:drops", "after")
}

// TestCloseEndsConnections uses a raw connection, which unlike rueidis never
// gives up on a stalled connection by itself: only Close can end it.
func TestCloseEndsConnections(t *testing.T) {
	p, err := faultproxy.Start(target.Addrs[0])
	require.NoError(t, err)
	conn, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	// Pause with a request queued: Close must still reap every goroutine.
	p.Pause(faultproxy.Both)
	_, err = fmt.Fprint(conn, "*1\r\n$4\r\nPING\r\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return p.Stats().Active == 1 }, 2*time.Second, 5*time.Millisecond)

	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return: connections or goroutines left running")
	}
	assert.Zero(t, p.Stats().Active)
	_, err = conn.Read(make([]byte, 16))
	assert.Error(t, err, "connection still open after Close")
	require.NoError(t, p.Close(), "second Close")
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	assert.Error(t, err, "listener still open")
}

func TestInvalidDirection(t *testing.T) {
	p := startProxy(t)
	assert.PanicsWithValue(t, "faultproxy: invalid Direction(0)", func() { p.Pause(0) })
	assert.Panics(t, func() { p.SetLatency(faultproxy.Both, -time.Second, 0) })
	assert.Equal(t, "server->client", faultproxy.ServerToClient.String())
}
