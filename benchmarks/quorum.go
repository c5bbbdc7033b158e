package benchmarks

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// QuorumPeers are the libraries compared on a quorum of independent
// servers, whose addresses a Peer's Connect gets comma-separated: redisync's
// Client from NewQuorum, and redsync with one pool per server (its Redlock),
// with the same retry delay as in [Redsync].
func QuorumPeers(poll time.Duration) []Peer {
	return []Peer{
		{Name: "redisync NewQuorum", Connect: func(addrs string) (Client, error) {
			var rcs []rueidis.Client
			for _, a := range strings.Split(addrs, ",") {
				rc, err := rueidis.NewClient(RueidisOption(a))
				if err != nil {
					closeRueidis(rcs)
					return nil, err
				}
				rcs = append(rcs, rc)
			}
			c, err := redisync.NewQuorum(rcs, redisync.WithLogger(quietLogger))
			if err != nil {
				closeRueidis(rcs)
				return nil, err
			}
			return &quorumClient{c: c, rcs: rcs}, nil
		}},
		{Name: "redsync (3 pools)", Connect: func(addrs string) (Client, error) {
			var pools []redsyncredis.Pool
			var rdbs []*goredis.Client
			for _, a := range strings.Split(addrs, ",") {
				rdb := goredis.NewClient(&goredis.Options{Addr: a})
				rdbs = append(rdbs, rdb)
				pools = append(pools, redsyncgoredis.NewPool(rdb))
			}
			delay := redsync.WithRetryDelayFunc(func(int) time.Duration { return poll/2 + rand.N(poll) })
			return &redsyncQuorum{rdbs: rdbs, redsyncClient: redsyncClient{rs: redsync.New(pools...),
				opts: []redsync.Option{redsync.WithTries(math.MaxInt32), delay}}}, nil
		}},
	}
}

func closeRueidis(rcs []rueidis.Client) {
	for _, rc := range rcs {
		rc.Close()
	}
}

// quorumClient is redisync's quorum Client in a Peer's shape.
type quorumClient struct {
	c   *redisync.Client
	rcs []rueidis.Client
}

func (c *quorumClient) NewMutex(name string) Mutex { return redisyncMutex{m: c.c.NewMutex(name)} }

func (c *quorumClient) Close() {
	_ = c.c.Close()
	closeRueidis(c.rcs)
}

// redsyncQuorum is redsync over several servers.
type redsyncQuorum struct {
	redsyncClient
	rdbs []*goredis.Client
}

func (c *redsyncQuorum) NewMutex(name string) Mutex {
	return &redsyncMutex{c: &c.redsyncClient, name: name}
}

func (c *redsyncQuorum) Close() {
	for _, rdb := range c.rdbs {
		_ = rdb.Close()
	}
}

// QuorumResults are the figures of the quorum comparison, by peer.
type QuorumResults struct {
	Servers   int
	Duration  time.Duration
	Peers     []string
	Serial    map[string]Summary
	Parallel  map[string]Summary
	Contended map[string]Summary
	Errors    map[string]error
}

// RunQuorum runs scenarios 1 to 3 (serial, parallel on separate names,
// contended by 4 Clients) for each of peers on the servers at addrs, each
// for d; the figures come without the servers' CPU (spread over several).
func RunQuorum(ctx context.Context, addrs []string, peers []Peer, d time.Duration) *QuorumResults {
	joined := strings.Join(addrs, ",")
	r := &QuorumResults{Servers: len(addrs), Duration: d, Serial: map[string]Summary{}, Parallel: map[string]Summary{},
		Contended: map[string]Summary{}, Errors: map[string]error{}}
	for _, p := range peers {
		r.Peers = append(r.Peers, p.Name)
		run := func(scenario string, n int, f func(cs []Client) (Summary, error), into map[string]Summary) {
			cs, err := connectAll(p, joined, n)
			if err != nil {
				r.Errors[scenario+"/"+p.Name] = err
				return
			}
			defer closeAll(cs)
			s, err := f(cs)
			if err != nil {
				r.Errors[scenario+"/"+p.Name] = err
				return
			}
			into[p.Name] = s
		}
		run("serial", 1, func(cs []Client) (Summary, error) {
			m := cs[0].NewMutex(lockName(p, "quorum-serial", 0))
			return timeSerial(d, func() error { return pair(ctx, m) })
		}, r.Serial)
		run("parallel", 1, func(cs []Client) (Summary, error) {
			ms := make([]Mutex, ParallelGoroutines)
			for g := range ms {
				ms[g] = cs[0].NewMutex(lockName(p, "quorum-parallel", g))
			}
			return hammer(ctx, d, len(ms), func(g int) Mutex { return ms[g] }, 0)
		}, r.Parallel)
		run("contended", ContendedClients, func(cs []Client) (Summary, error) {
			name := lockName(p, "quorum-contended", 0)
			ms := make([]Mutex, len(cs))
			for i, c := range cs {
				ms[i] = c.NewMutex(name)
			}
			return hammer(ctx, d, len(ms), func(g int) Mutex { return ms[g] }, CriticalSection)
		}, r.Contended)
	}
	return r
}

// Markdown returns the results as a Markdown section.
func (r *QuorumResults) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## On a quorum of %d servers\n\nredisync's `NewQuorum` Mutex and redsync (Redlock, one pool per server) on the same %d redis-servers on loopback, %v per scenario, one round.\n\n", r.Servers, r.Servers, r.Duration)
	b.WriteString("| scenario |")
	for _, p := range r.Peers {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString("\n|---|")
	for range r.Peers {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	row := func(label string, f func(p string) string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, p := range r.Peers {
			fmt.Fprintf(&b, " %s |", f(p))
		}
		b.WriteString("\n")
	}
	show := func(m map[string]Summary, p string, f func(Summary) string) string {
		s, ok := m[p]
		if !ok {
			return "–"
		}
		return f(s)
	}
	row("serial: pair p50", func(p string) string { return show(r.Serial, p, func(s Summary) string { return fmtDur(s.P50) }) })
	row("parallel (64 goroutines, own names): pairs/s", func(p string) string {
		return show(r.Parallel, p, func(s Summary) string { return fmt.Sprintf("%.0f", s.Rate()) })
	})
	row("contended (4 clients, 100 µs held): acquisitions/s", func(p string) string {
		return show(r.Contended, p, func(s Summary) string { return fmt.Sprintf("%.0f", s.Rate()) })
	})
	row("contended: fairness (Jain)", func(p string) string {
		return show(r.Contended, p, func(s Summary) string { return fmt.Sprintf("%.2f", s.Fairness) })
	})
	row("contended: longest wait", func(p string) string {
		return show(r.Contended, p, func(s Summary) string { return fmtDur(s.Longest) })
	})
	for k, err := range r.Errors {
		fmt.Fprintf(&b, "\n%s: %v\n", k, err)
	}
	return b.String()
}
