package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// contend runs the workload top is tested on until the test ends: three
// Clients take turns on the Mutex "job:hot" (20 ms each, so two wait
// queued), one holds "job:long" throughout, three share a FairMutex
// "job:fair" (50 ms each, queued too) and a Semaphore "job:quota" of 2
// permits (100 ms each): job:hot is the busiest.
func contend(t *testing.T, cs []*redisync.Client, names func(string) string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	loop := func(lock func() error, unlock func(), hold time.Duration) {
		wg.Go(func() {
			for ctx.Err() == nil {
				if lock() != nil {
					continue
				}
				select {
				case <-ctx.Done():
				case <-time.After(hold):
				}
				unlock()
			}
		})
	}
	for _, c := range cs {
		m := c.NewMutex(names("job:hot"))
		loop(func() error { return m.LockContext(ctx) }, m.Unlock, 20*time.Millisecond)
		f := c.NewFairMutex(names("job:fair"))
		loop(func() error { return f.LockContext(ctx) }, f.Unlock, 50*time.Millisecond)
		s := c.NewSemaphore(names("job:quota"), 2)
		loop(func() error { return s.Acquire(ctx, 1) }, func() { s.Release(1) }, 100*time.Millisecond)
	}
	long := cs[0].NewMutex(names("job:long"))
	require.NoError(t, long.LockContext(ctx))
	t.Cleanup(long.Unlock) // runs before the workers' cleanup above
}

// A screen is the text of a tmux pane, line by line.
type screen []string

// row returns the cells of the table row of lock name (split on runs of
// two or more spaces), or nil.
func (s screen) row(name string) []string {
	for _, l := range s {
		if strings.HasPrefix(l, name+" ") {
			return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1)
		}
	}
	return nil
}

// names returns the lock names of the table's rows, in order.
func (s screen) names() []string {
	var out []string
	in := false
	for _, l := range s {
		switch {
		case strings.HasPrefix(l, "NAME "):
			in = true
		case in && strings.TrimSpace(l) != "":
			out = append(out, strings.Fields(l)[0])
		}
	}
	return out
}

func (s screen) String() string { return strings.Join(s, "\n") }

// A pane is a tmux pane running a command, on a tmux server of the test's
// own.
type pane struct {
	t      *testing.T
	socket string
}

// startPane runs command in a new width x height tmux pane.
func startPane(t *testing.T, width, height int, command string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("REDISYNC_REQUIRE_TMUX") != "" {
			t.Fatal("REDISYNC_REQUIRE_TMUX is set and tmux is not on PATH")
		}
		t.Skip("tmux not on PATH: top's screen is tested in a tmux pane")
	}
	p := &pane{t: t, socket: fmt.Sprintf("redisync-top-%d-%d", os.Getpid(), time.Now().UnixNano())}
	p.tmux("new-session", "-d", "-s", "top", "-x", strconv.Itoa(width), "-y", strconv.Itoa(height), command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

// tmux runs a tmux command on the pane's server.
func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	require.NoError(p.t, err, "tmux %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// capture returns what the pane shows.
func (p *pane) capture() screen {
	return strings.Split(strings.TrimRight(p.tmux("capture-pane", "-p", "-t", "top"), "\n"), "\n")
}

// keys sends keys as tmux names them (Down, Enter, Escape, q).
func (p *pane) keys(keys ...string) { p.tmux(append([]string{"send-keys", "-t", "top"}, keys...)...) }

// await captures the pane until ok holds of it, and fails after 20 s with
// the last screen.
func (p *pane) await(what string, ok func(screen) bool) screen {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := p.capture()
		if ok(s) {
			p.t.Logf("%s:\n%s", what, s)
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: not seen in 20 s; the screen:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// positive reports whether cell is a number above zero.
func positive(cell string) bool {
	v, err := strconv.ParseFloat(cell, 64)
	return err == nil && v > 0
}

// top as an operator runs it: in a terminal (a tmux pane), on a server with
// contended locks, as a user the server lets read and subscribe only (so a
// write would fail it). The busiest lock comes first with its waiters and
// rates; the long-held lock's hold age grows; keys sort, select and open a
// lock's detail; Ctrl-C ends it, the terminal is as it was, and its
// subscriptions and connections end with it.
func TestTopScreen(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, func() (*redisserver.Target, error) {
		return redisserver.StartStandalone("--notify-keyspace-events", "Khgx")
	})
	admin, err := tg.NewClient()
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, admin.Do(ctx, admin.B().Arbitrary("ACL", "SETUSER", "viewer", "reset", "on", ">view", "~*", "&*",
		"+@read", "+@pubsub", "+@connection", "+config|get", "+role", "+time").Build()).Error())
	viewer, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: tg.Addrs, Username: "viewer", Password: "view", DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	err = viewer.Do(ctx, viewer.B().Set().Key("job:x").Value("1").Build()).Error()
	viewer.Close()
	require.ErrorContains(t, err, "NOPERM", "the viewer must not be able to write")
	contend(t, libClients(t, tg, 3), func(n string) string { return n })

	url := fmt.Sprintf("redis://viewer:view@%s", tg.Addrs[0])
	p := startPane(t, 120, 20, fmt.Sprintf("%s top --redis %s 'job:*'; echo TOP-EXIT=$?; stty -a; sleep 60", bin, url))

	s := p.await("the busiest lock first, with waiters and rates", func(s screen) bool {
		names, hot := s.names(), s.row("job:hot")
		return len(names) == 4 && names[0] == "job:hot" && len(hot) == len(topColumns) &&
			hot[1] == "Mutex" && positive(hot[5]) && positive(hot[6]) && positive(hot[7])
	})
	require.Contains(t, s[0], `4 locks matching "job:*", by activity`)
	require.Equal(t, "Semaphore", s.row("job:quota")[1])
	require.Regexp(t, `^2 holders?, [0-2]/2 permits$|^1 holder, [0-2]/2 permits$|^free$`, s.row("job:quota")[2])
	require.Equal(t, "FairMutex", s.row("job:fair")[1])
	long := s.row("job:long")
	require.Regexp(t, `^>\d`, long[3], "held since before top started")
	require.Equal(t, "0.0", long[6], "no acquisitions")

	p.keys("n") // by name
	p.await("sorted by name", func(s screen) bool {
		return fmt.Sprint(s.names()) == "[job:fair job:hot job:long job:quota]" && strings.Contains(s[0], "by name")
	})
	p.keys("Down", "Down", "Enter") // the third row: job:long
	s = p.await("job:long's detail", func(s screen) bool {
		return strings.Contains(s[0], "inspect job:long (Mutex)") && strings.Contains(s.String(), `Mutex "job:long": locked`)
	})
	require.Regexp(t, `(?m)^  CLIENT +OWNER +HOLDS +TTL$`, s.String())
	p.keys("Escape")
	p.await("back to the table", func(s screen) bool { return len(s.names()) == 4 })

	numpat := func() int64 {
		n, err := admin.Do(ctx, admin.B().PubsubNumpat().Build()).AsInt64()
		require.NoError(t, err)
		return n
	}
	require.Positive(t, numpat(), "top's pattern subscriptions while it runs")
	p.keys("C-c") // q ends it the same way (TestTopKeys)
	s = p.await("top ended, then stty -a", func(s screen) bool {
		return strings.Contains(s.String(), "TOP-EXIT=0") && strings.Contains(s.String(), "icanon")
	})
	require.Regexp(t, `(^|\s)icanon(\s|$)`, s.String(), "the terminal's line editing is back")
	require.Regexp(t, `(^|\s)echo(\s|$)`, s.String(), "the terminal's echo is back")
	require.Zero(t, numpat(), "a pattern subscription outlived top")
	clients, err := admin.Do(ctx, admin.B().ClientList().Build()).ToString()
	require.NoError(t, err)
	require.NotContains(t, clients, "user=viewer", "a connection of top's is left")
}

// top's output is not a terminal: a plain table a refresh, with no escape
// sequences, for as many refreshes as --count says.
func TestTopPlain(t *testing.T) {
	t.Parallel()
	tg := startTarget(t, func() (*redisserver.Target, error) { return redisserver.StartStandalone() })
	contend(t, libClients(t, tg, 3), func(n string) string { return n })
	r := runCmd(t, "", nil, "top", "--redis", "redis://"+tg.Addrs[0], "--count", "3", "--interval", "500ms", "--sort", "name", "job:*")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "\x1b")
	require.Contains(t, r.stdout, "# keyspace notifications are off")
	tables := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  \S+  4 locks matching "job:\*", by name$`).FindAllStringIndex(r.stdout, -1)
	require.Len(t, tables, 3)
	last := screen(strings.Split(r.stdout[tables[2][0]:], "\n"))
	require.Equal(t, "[job:fair job:hot job:long job:quota]", fmt.Sprint(last.names()))
	require.True(t, positive(last.row("job:hot")[7]), "job:hot's releases, from its messages: %v", last.row("job:hot"))
	require.Equal(t, []string{"?", "?"}, last.row("job:quota")[6:8], "a Semaphore's releases publish nothing to count")

	for _, bad := range [][]string{
		{"top", "--sort", "size"}, {"top", "--interval", "1ms"}, {"top", "a", "b"}, {"top", "--max-names", "0"},
	} {
		r := runCmd(t, "", nil, append(bad, "--redis", "redis://"+tg.Addrs[0])...)
		require.Equal(t, exitUsage, r.code, "%v: %s", bad, r.stderr)
	}
}

// top on a Redis Cluster scans every master and follows each lock's sharded
// channels, so the releases of locks in different slots are counted
// without keyspace notifications; and behind Sentinel it reads the master.
func TestTopTopologies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		start func() (*redisserver.Target, error)
		flags func(tg *redisserver.Target) []string
	}{
		{"cluster", func() (*redisserver.Target, error) { return redisserver.StartClusterTarget(3, 0) },
			func(tg *redisserver.Target) []string {
				return []string{"--redis", "redis://" + tg.Addrs[0], "--cluster"}
			}},
		{"sentinel", redisserver.StartSentinelTarget,
			func(tg *redisserver.Target) []string {
				return []string{"--redis", "redis://" + strings.Join(tg.Addrs, ","), "--sentinel-master", redisserver.MasterSet}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tg := startTarget(t, tc.start)
			// Names in different slots (on a cluster, most likely on
			// different masters).
			contend(t, libClients(t, tg, 3), func(n string) string { return "job:{" + strings.TrimPrefix(n, "job:") + "}" })
			args := append([]string{"top", "--count", "3", "--interval", "700ms", "--sort", "name"}, tc.flags(tg)...)
			r := runCmd(t, "", nil, append(args, "job:*")...)
			require.Equal(t, 0, r.code, r.stderr)
			i := strings.LastIndex(r.stdout, "NAME ")
			require.Positive(t, i, r.stdout)
			last := screen(strings.Split(r.stdout[i:], "\n"))
			require.Equal(t, "[job:{fair} job:{hot} job:{long} job:{quota}]", fmt.Sprint(last.names()))
			if tg.Cluster != nil { // the names are spread over the three masters, each of which top scans
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				masters := map[string]bool{}
				for _, n := range last.names() {
					m, err := tg.Cluster.MasterForSlot(ctx, layout.Slot(n))
					require.NoError(t, err)
					masters[m] = true
				}
				require.Len(t, masters, 3)
			}
			require.True(t, positive(last.row("job:{hot}")[7]), "job:{hot}'s releases: %v", last.row("job:{hot}"))
			require.True(t, positive(last.row("job:{fair}")[7]), "job:{fair}'s turns: %v", last.row("job:{fair}"))
		})
	}
}
