package redisync_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

// standalone is the server most tests use; cluster starts on first use.
var standalone *redisserver.Target

// Environment of a child process started by startChild.
const (
	childEnv    = "REDISYNC_TEST_CHILD" // the lock name to take and hold
	childAddrs  = "REDISYNC_TEST_ADDRS"
	childMode   = "REDISYNC_TEST_MODE" // "mini", "standalone" or "cluster"
	childLeaseE = "REDISYNC_TEST_WATCHDOG"
	childRW     = "REDISYNC_TEST_RW"
)

func TestMain(m *testing.M) {
	if name := os.Getenv(childEnv); name != "" {
		os.Exit(runChild(name))
	}
	redistest.Parallel(8)
	os.Exit(redistest.Run(m,
		func() (err error) {
			standalone, err = redisserver.StartStandalone()
			return err
		},
		func() {
			_ = standalone.Stop()
			stopTopologies()
		}))
}

// uniqueSuffix returns a suffix for a test's lock names that no other call
// in the process returns: a second -count of the test on the same server
// must not find the first one's keys (see [redistest.UniqueSuffix]).
func uniqueSuffix() string { return redistest.UniqueSuffix() }

// freshName returns a lock name for the test that no other call in the
// process returns: its name and a uniqueSuffix.
func freshName(t testing.TB) string { return redistest.Name(t) }

// requireReal skips a test that needs what miniredis does not emulate.
func requireReal(t *testing.T, tg *redisserver.Target, what string) {
	t.Helper()
	if !tg.Real() {
		t.Skipf("miniredis lacks %s; %s", what, redisserver.InstallHint)
	}
}

// newRueidis returns a rueidis client for tg, closed when the test ends.
func newRueidis(t testing.TB, tg *redisserver.Target) rueidis.Client {
	t.Helper()
	rc, err := tg.NewClient()
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return rc
}

// scaled returns n, the rounds of a hammer test, on a real server, and an
// eighth of it (at least 5) on miniredis, whose scripts run in an
// interpreter in the test process: tens of times slower, so the full count
// took minutes there. A machine with redis-server, CI's, runs them all.
func scaled(tg *redisserver.Target, n int) int {
	if tg.Real() {
		return n
	}
	return max(n/8, 5)
}

// newClient returns a redisync Client on its own rueidis client (its own
// connections, as another process would have), closed when the test ends.
func newClient(t testing.TB, tg *redisserver.Target, opts ...redisync.Option) (*redisync.Client, rueidis.Client) {
	t.Helper()
	rc := newRueidis(t, tg)
	c, err := redisync.New(rc, append([]redisync.Option{redisync.WithLogger(testLogger(t))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, rc
}

// testLogger sends the library's log lines to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// startChild re-executes the test binary as a process that takes the lock
// name on tg with the given watchdog timeout, and returns once it holds it.
// env adds variables: childRW=read makes the child take an RWMutex's read
// lock instead of a Mutex.
func startChild(t *testing.T, tg *redisserver.Target, name string, watchdog time.Duration, env ...string) *exec.Cmd {
	t.Helper()
	return startChildSaying(t, tg, name, watchdog, "held", env...)
}

// startChildSaying starts a child as startChild does and returns once it has
// printed its first line, which must be want.
func startChildSaying(t *testing.T, tg *redisserver.Target, name string, watchdog time.Duration, want string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+name, childAddrs+"="+strings.Join(tg.Addrs, ","),
		childMode+"="+childModeOf(tg), childLeaseE+"="+watchdog.String())
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "child output")
	require.Equal(t, want+"\n", line)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return cmd
}

// childModeOf names tg's kind for a child process.
func childModeOf(tg *redisserver.Target) string {
	switch {
	case tg.Mini != nil:
		return "mini"
	case tg.Cluster != nil:
		return "cluster"
	case tg.Sentinel != nil:
		return "sentinel"
	}
	return "standalone"
}

// runChild is the body of a child process: hold the lock until killed.
func runChild(name string) int {
	addrs := strings.Split(os.Getenv(childAddrs), ",")
	tg := &redisserver.Target{Addrs: addrs}
	switch os.Getenv(childMode) {
	case "cluster":
		tg.Cluster = &redisserver.Cluster{Addrs: addrs}
	case "sentinel":
		tg.Sentinel = &redisserver.SentinelSet{Addrs: addrs}
	}
	opt := tg.ClientOption()
	opt.AlwaysRESP2 = os.Getenv(childMode) == "mini"
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	watchdog, _ := time.ParseDuration(os.Getenv(childLeaseE))
	c, err := redisync.New(rc, redisync.WithWatchdogTimeout(watchdog))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if os.Getenv(childHandover) != "" {
		return runHandoverChild(c, rc, name)
	}
	if os.Getenv(childOnce) != "" {
		return runOnceChild(c, name)
	}
	if os.Getenv(childElection) != "" {
		return runElectionChild(c, name)
	}
	if kind := os.Getenv(childKind); kind != "" {
		return runQueuedChild(c, kind, name) // FairMutex and Semaphore children
	}
	lock := c.NewMutex(name).LockContext
	if os.Getenv(childRW) == "read" {
		lock = c.NewRWMutex(name).RLockContext
	}
	if err := lock(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	fmt.Println("held")
	select {} // until SIGKILL
}

// clientOn is a redisync Client on its own connections to opt's server.
func clientOn(t *testing.T, opt rueidis.ClientOption, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	rc, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c, err := redisync.New(rc, append([]redisync.Option{redisync.WithLogger(testLogger(t))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
