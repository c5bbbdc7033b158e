// Package redisynctest gives a service's own tests redisync Clients on a
// Redis server that lives as long as the test, the way net/http/httptest
// gives them HTTP servers, with nothing to install or start:
//
//	func TestCharge(t *testing.T) {
//		c := redisynctest.New(t)
//		svc := payments.New(c) // the service under test, on a real lock
//		...
//	}
//
// The server is a real redis-server on a free loopback port when one is
// installed (on PATH, or named by the REDIS_SERVER_BIN environment
// variable), otherwise an in-process one (miniredis), which runs redisync's
// scripts but not its replication options. Each Client's connections pass
// through a small proxy in the test process, which is how [PauseRenewals]
// cuts it off.
//
// At the test's end its Clients, their rueidis clients and its server are
// closed; when the last test using the package ends, it fails if goroutines
// of redisync or rueidis that were not there before its first test still run
// (a Client the service made and never closed, say).
//
// Importing the package adds to a test binary: this package, redisync's
// test-server and proxy code, and miniredis (with the Lua interpreter it
// runs scripts in). Importing redisync alone adds none of it.
package redisynctest

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/faultproxy"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// An Option configures New.
type Option func(*config)

type config struct {
	shared bool
	opts   []redisync.Option
}

// Shared puts the test on a server shared with the other tests that ask for
// one, each test in a database of its own (SELECT), so that equal lock names
// in two tests are two locks. The shared server runs while a test that uses
// it runs, so tests that run in parallel (t.Parallel) share it and tests that
// run one after another may each start one. Pub/Sub channels are not kept
// per database: a release in one test may wake a waiter on a lock of the same
// name in another, which looks again and goes on waiting.
func Shared() Option {
	return func(cfg *config) { cfg.shared = true }
}

// WithOptions passes opts to redisync.New for each Client of the test, those
// of New and of Another.
func WithOptions(opts ...redisync.Option) Option {
	return func(cfg *config) { cfg.opts = append(cfg.opts, opts...) }
}

// sharedDatabases is how many databases a shared server has: how many tests
// can share it at once.
const sharedDatabases = 1024

// A server is a Redis server of one test, or shared by several.
type server struct {
	target *redisserver.Target
	users  int   // tests on it, for a shared one
	free   []int // databases given back by the tests that used them
	next   int   // the lowest database never given
}

// An env is one test's: its server and database, and its Clients.
type env struct {
	srv   *server
	db    int
	opts  []redisync.Option
	admin rueidis.Client // straight to the server, for Vanish
	conns []*conn
}

// A conn is one Client of a test and what it runs on.
type conn struct {
	env    *env
	client *redisync.Client
	rc     rueidis.Client
	proxy  *faultproxy.Proxy
}

var (
	mu       sync.Mutex
	shared   *server
	byClient = map[*redisync.Client]*conn{}
	live     int             // envs whose test has not ended
	baseline map[string]bool // the goroutines running when live went from 0 to 1; nil once checked against
)

// New returns a Client on a fresh Redis server (or, with Shared, a fresh
// database of a shared one) that lives as long as the test. It fails the test
// if no server can be started.
func New(tb testing.TB, opts ...Option) *redisync.Client {
	tb.Helper()
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	e, err := start(cfg)
	if err != nil {
		tb.Fatalf("redisynctest: %v", err)
	}
	tb.Cleanup(func() { e.close(tb) })
	return e.connect(tb)
}

// start takes a server and a database for a new test.
func start(cfg config) (*env, error) {
	e := &env{opts: cfg.opts}
	if !cfg.shared {
		target, err := redisserver.StartStandalone()
		if err != nil {
			return nil, err
		}
		e.srv = &server{target: target, users: 1}
	}
	mu.Lock()
	defer mu.Unlock()
	if cfg.shared {
		if err := e.share(); err != nil {
			return nil, err
		}
	}
	admin, err := rueidis.NewClient(e.clientOption(e.srv.target.Addrs[0]))
	if err != nil {
		e.leave()
		return nil, err
	}
	e.admin = admin
	if baseline == nil {
		// A test that starts while the last one's check still runs keeps
		// that check's baseline, and the check moves to its end.
		baseline = goroutines()
	}
	live++
	return e, nil
}

// share puts e on the shared server, starting it if none runs, in a
// database no other test uses. mu is held.
func (e *env) share() error {
	if shared == nil {
		target, err := redisserver.StartStandalone("--databases", fmt.Sprint(sharedDatabases))
		if err != nil {
			return err
		}
		shared = &server{target: target}
	}
	switch n := len(shared.free); {
	case n > 0:
		e.db, shared.free = shared.free[n-1], shared.free[:n-1]
	case shared.next < sharedDatabases:
		e.db, shared.next = shared.next, shared.next+1
	default:
		return fmt.Errorf("more than %d tests share the server at once", sharedDatabases)
	}
	e.srv = shared
	shared.users++
	return nil
}

// clientOption returns the rueidis options for a client of e's database
// at addr (the server's, or a proxy's).
func (e *env) clientOption(addr string) rueidis.ClientOption {
	opt := e.srv.target.ClientOption()
	opt.InitAddress, opt.SelectDB = []string{addr}, e.db
	return opt
}

// connect makes a Client of the test, through a proxy of its own.
func (e *env) connect(tb testing.TB) *redisync.Client {
	tb.Helper()
	proxy, err := faultproxy.Start(e.srv.target.Addrs[0])
	if err != nil {
		tb.Fatalf("redisynctest: %v", err)
	}
	rc, err := rueidis.NewClient(e.clientOption(proxy.Addr()))
	if err != nil {
		_ = proxy.Close()
		tb.Fatalf("redisynctest: %v", err)
	}
	c, err := redisync.New(rc, e.opts...)
	if err != nil {
		rc.Close()
		_ = proxy.Close()
		tb.Fatalf("redisynctest: %v", err)
	}
	cn := &conn{env: e, client: c, rc: rc, proxy: proxy}
	mu.Lock()
	e.conns = append(e.conns, cn)
	byClient[c] = cn
	mu.Unlock()
	return c
}

// close ends the test's part: its Clients, its database or server, and,
// for the last test, the check for goroutines left running.
func (e *env) close(tb testing.TB) {
	tb.Helper()
	mu.Lock()
	conns := e.conns
	for _, cn := range conns {
		delete(byClient, cn.client)
	}
	mu.Unlock()
	for _, cn := range conns {
		_ = cn.client.Close()
		cn.rc.Close()
		_ = cn.proxy.Close()
	}
	if e.srv == shared {
		// The next test on this database starts from nothing.
		_ = e.admin.Do(context.Background(), e.admin.B().Flushdb().Build()).Error()
	}
	e.admin.Close()
	mu.Lock()
	e.leave()
	live--
	last := live == 0
	mu.Unlock()
	if last {
		checkLeaks(tb)
	}
}

// idle reports whether no test runs: the goroutines beside the baseline
// are then left by closed Clients. With done (the check ends) it drops the
// baseline too, so the next test to start takes its own.
func idle(done bool) bool {
	mu.Lock()
	defer mu.Unlock()
	if live > 0 {
		return false
	}
	if done {
		baseline = nil
	}
	return true
}

// leave gives back the test's database and stops its server when no test
// uses it any more. mu is held.
func (e *env) leave() {
	e.srv.users--
	if e.srv == shared {
		e.srv.free = append(e.srv.free, e.db)
	}
	if e.srv.users > 0 {
		return
	}
	if e.srv == shared {
		shared = nil
	}
	_ = e.srv.target.Stop()
}

// of returns what c runs on, failing the test if c is not a Client of
// this package's.
func of(tb testing.TB, c *redisync.Client) *conn {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	cn, ok := byClient[c]
	if !ok {
		tb.Fatal("redisynctest: the Client was not made by New or Another, or its test has ended")
	}
	return cn
}

// Rueidis returns the rueidis client that c was made with, connected to the
// test's database, for raw commands (its connections pass through c's proxy,
// so PauseRenewals holds them too).
func Rueidis(tb testing.TB, c *redisync.Client) rueidis.Client {
	tb.Helper()
	return of(tb, c).rc
}

// Another returns a second Client on c's server and database, with
// connections of its own: another process of the service, as far as the
// locks can tell. It is closed at the test's end.
func Another(tb testing.TB, c *redisync.Client) *redisync.Client {
	tb.Helper()
	return of(tb, c).env.connect(tb)
}

// Vanish deletes every key of c's test (FLUSHDB), as the restart of a Redis
// without persistence would, or a ForceUnlock of each lock from elsewhere:
// every hold vanishes at once, and the Clients holding them learn it at
// their next renewal, at most a third of their watchdog timeout later (see
// redisync.WithWatchdogTimeout; a hold taken WithLease is not renewed and
// is not told). Their Done channels close, and Err says why.
func Vanish(tb testing.TB, c *redisync.Client) {
	tb.Helper()
	admin := of(tb, c).env.admin
	if err := admin.Do(context.Background(), admin.B().Flushdb().Build()).Error(); err != nil {
		tb.Fatalf("redisynctest: FLUSHDB: %v", err)
	}
}

// PauseRenewals cuts c off from the server until resume is called: its
// commands, renewals included, wait in its proxy and reach the server on
// resume, as when the process is paused (a long GC, SIGSTOP) or partitioned
// away. Its holds then run out in Redis at the end of their lease, where
// another Client can take them, and c learns of the loss at that lease's end
// too, from its own clock: the holds' Done channels close with
// redisync.ErrLockLost. Anything else c does meanwhile (a Lock, an Unlock)
// waits too. resume is also called at the test's end.
func PauseRenewals(tb testing.TB, c *redisync.Client) (resume func()) {
	tb.Helper()
	p := of(tb, c).proxy
	p.Pause(faultproxy.Both)
	var once sync.Once
	resume = func() { once.Do(func() { p.Resume(faultproxy.Both) }) }
	tb.Cleanup(resume)
	return resume
}

// leakWait is how long checkLeaks lets goroutines of closed Clients end.
var leakWait = 5 * time.Second

// checkLeaks fails tb if goroutines of redisync or rueidis run that did not
// when the first test began, once they had leakWait to end.
// It gives up without a word when another test starts meanwhile (its
// goroutines are not leaks): that test's end checks again, against the same
// baseline.
func checkLeaks(tb testing.TB) {
	tb.Helper()
	mu.Lock()
	base := baseline // replaced, never changed, so base is read without mu
	mu.Unlock()
	deadline := time.Now().Add(leakWait)
	for {
		var left []string
		for g := range goroutines() {
			if !base[g] && ours(g) {
				left = append(left, g)
			}
		}
		expired := time.Now().After(deadline)
		if !idle(len(left) == 0 || expired) || len(left) == 0 {
			return
		}
		if expired {
			tb.Errorf("redisynctest: %d goroutines of redisync or rueidis still run after every test's Clients were closed "+
				"(a Client made outside redisynctest and not closed?):\n\n%s", len(left), strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ours reports whether the goroutine whose stack is g runs code of
// redisync or rueidis (this package's own check aside).
func ours(g string) bool {
	if strings.Contains(g, "redisynctest.checkLeaks") {
		return false
	}
	return strings.Contains(g, "github.com/go-redisync/redisync") || strings.Contains(g, "github.com/redis/rueidis")
}

// goroutines returns the running goroutines, each as its stack without the
// header line's state (a goroutine's state changes, its identity does not).
func goroutines() map[string]bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	all := map[string]bool{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, rest, _ := strings.Cut(g, "\n")
		id, _, _ := strings.Cut(header, " [") // "goroutine 7 [chan receive]:"
		all[id+"\n"+firstFrame(rest)] = true
	}
	return all
}

// firstFrame returns the function that created a goroutine if its stack
// says ("created by …"), else its top frame.
func firstFrame(stack string) string {
	if i := strings.LastIndex(stack, "created by "); i >= 0 {
		line, _, _ := strings.Cut(stack[i:], "\n")
		return line
	}
	line, _, _ := strings.Cut(stack, "\n")
	return line
}
