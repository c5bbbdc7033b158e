package benchmarks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/faultproxy"
)

// Config sizes a comparison run. Every scenario is bounded in time; a full
// run takes about five minutes on two cores.
type Config struct {
	// Duration is how long each timed scenario (1 to 4b) runs per library
	// and round.
	Duration time.Duration
	// Rounds is how many times each timed scenario runs per library; its
	// figures are the medians of the rounds.
	Rounds int
	// Poll is the retry delay of the libraries that poll (see DefaultPoll).
	Poll time.Duration
	// Held is how many locks scenarios 5 and 6 hold at once.
	Held int
	// RenewalWindow is how long scenario 5 watches the held locks renewed.
	RenewalWindow time.Duration
	// AllocPairs is how many Lock+Unlock pairs scenario 6 counts.
	AllocPairs int
	// Waiters and WaiterNames size scenario 7.
	Waiters, WaiterNames int
	// Settle is how long scenario 7's waiters wait before they are measured
	// and released; DrainTimeout bounds the drain.
	Settle, DrainTimeout time.Duration
	// StepLimit bounds each scenario of each library: one that has not
	// returned by then is abandoned (its goroutines left running) and
	// recorded as an error, so a library that hangs cannot hang the run.
	StepLimit time.Duration
	// CeilingCalls is how many script calls redis-benchmark makes (scenario 8).
	CeilingCalls int
	// Delay is how long a proxy between every client and the server holds
	// each request and each reply while scenarios 0 to 3 run again through
	// it (as Redis on another host of one zone would); 0 skips them.
	Delay time.Duration
	// Peers are the libraries compared, redisync first; nil means
	// Peers(Poll).
	Peers []Peer
	// Primitives are redisync's other primitives, timed in scenarios 1 and 3
	// only; nil means RedisyncPrimitives().
	Primitives []Peer
	// Log receives a line per scenario and library as the run proceeds;
	// nil discards them.
	Log io.Writer
}

// DefaultConfig is the full run (about five minutes on two cores, the
// scenarios through the delay proxy included).
func DefaultConfig() Config {
	return Config{
		Duration:      2 * time.Second,
		Rounds:        3,
		Poll:          DefaultPoll,
		Held:          10000,
		RenewalWindow: 3 * (RenewalWatchdog / 3), // three renewal intervals
		AllocPairs:    2000,
		Waiters:       10000,
		WaiterNames:   1000,
		Settle:        time.Second,
		DrainTimeout:  20 * time.Second,
		CeilingCalls:  200000,
		StepLimit:     time.Minute,
		Delay:         DelayEachWay,
	}
}

// QuickConfig is a short run for CI: the same scenarios at a tenth of the
// size, which checks that every library produces figures, not how fast.
func QuickConfig() Config {
	return Config{
		Duration:      300 * time.Millisecond,
		Rounds:        1,
		Poll:          DefaultPoll,
		Held:          1000,
		RenewalWindow: RenewalWatchdog/3 + 200*time.Millisecond,
		AllocPairs:    200,
		Waiters:       1000,
		WaiterNames:   100,
		Settle:        300 * time.Millisecond,
		DrainTimeout:  10 * time.Second,
		CeilingCalls:  20000,
		StepLimit:     20 * time.Second,
		Delay:         DelayEachWay,
	}
}

// Results are the figures of one run. A scenario that failed for a library
// has no figure for it and an entry in Errors under "scenario/library".
type Results struct {
	Machine    Machine
	Config     Config
	Peers      []string
	Primitives []string // the names of Config.Primitives

	Ping        Summary // one PING round trip, the physical yardstick
	Serial      map[string]Summary
	Parallel    map[string]Summary
	Contended   map[string]Summary
	SameProcess map[string]Summary // scenario 4: one shared handle
	OwnHandles  map[string]Summary // scenario 4b: a handle per goroutine
	Renewal     RenewalResult
	Allocs      map[string]AllocResult
	Held        map[string]HoldResult
	Waiters     map[string]WaitersResult
	Ceiling     float64 // scenario 8: script calls per second
	CeilingCmd  string  // the redis-benchmark command line of scenario 8
	Delayed     Delayed // scenarios 0 to 3 through the delay proxy

	Errors  map[string]error
	Elapsed time.Duration
}

// Run runs every scenario against the Redis server at addr, library after
// library within each scenario, so that drift on a shared machine spreads
// over all of them.
//
// The locks are taken and released under context.Background(), as Lock and
// Unlock use: ctx only stops the run, its scenarios abandoned. (Under a
// context that can be cancelled but has no deadline, rueidis sends every
// call through its pipelining goroutines, which costs a lone caller time.)
func Run(ctx context.Context, addr string, cfg Config) (*Results, error) {
	abort := ctx.Done()
	ctx = context.Background()
	if cfg.Peers == nil {
		cfg.Peers = Peers(cfg.Poll)
	}
	if cfg.Primitives == nil {
		cfg.Primitives = RedisyncPrimitives()
	}
	cfg.Rounds = max(cfg.Rounds, 1)
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	admin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	start := time.Now()
	r := &Results{
		Machine: describeMachine(ctx, admin), Config: cfg,
		Serial: map[string]Summary{}, Parallel: map[string]Summary{}, Contended: map[string]Summary{},
		SameProcess: map[string]Summary{}, OwnHandles: map[string]Summary{}, Allocs: map[string]AllocResult{},
		Held: map[string]HoldResult{}, Waiters: map[string]WaitersResult{}, Errors: map[string]error{},
	}
	for _, p := range cfg.Peers {
		r.Peers = append(r.Peers, p.Name)
	}
	for _, p := range cfg.Primitives {
		r.Primitives = append(r.Primitives, p.Name)
	}
	step := func(scenario, peer string) stepper {
		return stepper{r: r, log: log, limit: cfg.StepLimit, scenario: scenario, peer: peer, abort: abort}
	}
	r.timed(ctx, addr, step)
	if cfg.Delay > 0 {
		if err := r.delayed(ctx, addr, step); err != nil {
			r.Errors["delayed/proxy"] = err
		}
	}
	for _, p := range cfg.Peers {
		if a, err := measure(ctx, step("allocs", p.Name), func(ctx context.Context) (AllocResult, error) { return AllocsPerPair(ctx, p, addr, cfg.AllocPairs) }); err == nil {
			r.Allocs[p.Name] = a
		}
	}
	r.Renewal, _ = measure(ctx, step("renewal", "redisync"), func(ctx context.Context) (RenewalResult, error) {
		return Renewal(ctx, addr, admin, cfg.Held, cfg.RenewalWindow)
	})
	if r.Renewal.Held.Locks > 0 {
		r.Held["redisync"] = r.Renewal.Held
	}
	for _, p := range cfg.Peers {
		if p.Name == subjectName {
			continue // measured with scenario 5
		}
		if h, err := measure(ctx, step("held", p.Name), func(ctx context.Context) (HoldResult, error) { return HeldLocks(ctx, p, addr, cfg.Held) }); err == nil {
			r.Held[p.Name] = h
		}
	}
	for _, p := range cfg.Peers {
		// Kept even after an error: a drain that timed out is a figure.
		r.Waiters[p.Name], _ = measure(ctx, step("waiters", p.Name), func(ctx context.Context) (WaitersResult, error) {
			return Waiters(ctx, p, addr, admin, cfg.Waiters, cfg.WaiterNames, cfg.Settle, cfg.DrainTimeout)
		})
	}
	type ceiling struct {
		rps float64
		cmd string
	}
	c, _ := measure(ctx, step("ceiling", "redis"), func(ctx context.Context) (ceiling, error) {
		rps, cmd, err := Ceiling(ctx, addr, admin, cfg.CeilingCalls)
		return ceiling{rps: rps, cmd: cmd}, err
	})
	r.Ceiling, r.CeilingCmd = c.rps, c.cmd
	r.Elapsed = time.Since(start)
	return r, nil
}

// timed runs the timed scenarios (the PING reference and 1 to 4b) in
// Config.Rounds rounds, each round every scenario and library once, and
// keeps the medians.
func (r *Results) timed(ctx context.Context, addr string, step func(scenario, peer string) stepper) {
	cfg := r.Config
	ping := map[string]Summary{}
	both := slices.Concat(cfg.Peers, cfg.Primitives)
	r.rounds(ctx, addr, step, []scenario{
		{"ping", ping, pingScenario, []Peer{{Name: "rueidis"}}},
		{"serial", r.Serial, Serial, both},
		{"parallel", r.Parallel, Parallel, cfg.Peers},
		{"contended", r.Contended, Contended, both},
		{"same-process", r.SameProcess, SameProcess, cfg.Peers},
		{"own-handles", r.OwnHandles, SameProcessHandles, cfg.Peers},
	})
	r.Ping = ping["rueidis"]
}

// Delayed are the figures of scenarios 0 to 3 taken through a proxy that
// holds each request and each reply for Delay.
type Delayed struct {
	Delay                       time.Duration
	Ping                        Summary
	Serial, Parallel, Contended map[string]Summary
}

// DelayEachWay is the default delay of the proxy: about what a request
// and its reply take each way between two hosts of one zone.
const DelayEachWay = 250 * time.Microsecond

// delayed runs scenarios 0 to 3 again, every library's connections going
// through a proxy that delays each way by Config.Delay.
func (r *Results) delayed(ctx context.Context, addr string, step func(scenario, peer string) stepper) error {
	proxy, err := faultproxy.Start(addr)
	if err != nil {
		return err
	}
	defer func() { _ = proxy.Close() }()
	proxy.SetLatency(faultproxy.Both, r.Config.Delay, 0)
	d := &r.Delayed
	d.Delay = r.Config.Delay
	d.Serial, d.Parallel, d.Contended = map[string]Summary{}, map[string]Summary{}, map[string]Summary{}
	ping := map[string]Summary{}
	r.rounds(ctx, proxy.Addr(), step, []scenario{
		{"delayed-ping", ping, pingScenario, []Peer{{Name: "rueidis"}}},
		{"delayed-serial", d.Serial, Serial, r.Config.Peers},
		{"delayed-parallel", d.Parallel, Parallel, r.Config.Peers},
		{"delayed-contended", d.Contended, Contended, r.Config.Peers},
	})
	d.Ping = ping["rueidis"]
	return nil
}

// A scenario is one timed scenario: run for each of peers, its medians
// kept in into.
type scenario struct {
	name  string
	into  map[string]Summary
	run   func(context.Context, Peer, string, time.Duration) (Summary, error)
	peers []Peer
}

// pingScenario is the PING reference as a scenario.
func pingScenario(ctx context.Context, _ Peer, addr string, d time.Duration) (Summary, error) {
	return PingReference(ctx, addr, d)
}

// ErrAbandoned is wrapped by the error of a scenario that did not finish
// within its time limit: its goroutines were left running and it has no
// figures.
var ErrAbandoned = errors.New("abandoned")

// rounds runs the scenarios timed in Config.Rounds rounds, each round every
// scenario and library once, against the server at addr, and keeps the
// medians.
func (r *Results) rounds(ctx context.Context, addr string, step func(scenario, peer string) stepper, timed []scenario) {
	cfg := r.Config
	rounds := map[string][]Summary{}
	for round := range cfg.Rounds {
		for _, s := range timed {
			for _, p := range s.peers {
				st := step(s.name, p.Name)
				if cfg.Rounds > 1 {
					st.scenario = fmt.Sprintf("%s#%d", s.name, round+1)
				}
				if sum, err := measure(ctx, st, func(ctx context.Context) (Summary, error) { return s.run(ctx, p, addr, cfg.Duration) }); err == nil {
					rounds[s.name+"/"+p.Name] = append(rounds[s.name+"/"+p.Name], sum)
				}
			}
		}
	}
	for _, s := range timed {
		for _, p := range s.peers {
			if ss := rounds[s.name+"/"+p.Name]; len(ss) > 0 {
				s.into[p.Name] = median(ss)
			}
		}
	}
}

// median returns the median of each figure of ss, taken separately (the
// rate's with its count and time); Stalled is the largest, since a waiter
// never woken in any round is a defect.
func median(ss []Summary) Summary {
	mid := func(less func(a, b Summary) int) Summary {
		s := slices.Clone(ss)
		slices.SortFunc(s, less)
		return s[len(s)/2]
	}
	byDur := func(f func(Summary) time.Duration) time.Duration {
		return f(mid(func(a, b Summary) int { return cmp.Compare(f(a), f(b)) }))
	}
	m := mid(func(a, b Summary) int { return cmp.Compare(a.Rate(), b.Rate()) })
	m.P50 = byDur(func(s Summary) time.Duration { return s.P50 })
	m.P99 = byDur(func(s Summary) time.Duration { return s.P99 })
	m.Handover50 = byDur(func(s Summary) time.Duration { return s.Handover50 })
	m.Handover99 = byDur(func(s Summary) time.Duration { return s.Handover99 })
	m.Longest = byDur(func(s Summary) time.Duration { return s.Longest })
	m.ServerCPU = byDur(func(s Summary) time.Duration { return s.ServerCPU })
	m.ClientCPU = byDur(func(s Summary) time.Duration { return s.ClientCPU })
	m.Commands = mid(func(a, b Summary) int { return cmp.Compare(a.Commands, b.Commands) }).Commands
	m.Fairness = mid(func(a, b Summary) int { return cmp.Compare(a.Fairness, b.Fairness) }).Fairness
	for _, s := range ss {
		m.Stalled = max(m.Stalled, s.Stalled)
	}
	return m
}

// A stepper names one scenario of one library for measure.
type stepper struct {
	r        *Results
	log      io.Writer
	limit    time.Duration
	scenario string
	peer     string
	abort    <-chan struct{} // closed when the run is stopped
}

// measure runs f, logs the step and records its error. If f has not
// returned within the step limit, measure abandons it and returns an error of
// its own with the zero T: it cancels f's context, so that a call waiting
// with it returns and f ends, but does not wait for that (f only ever writes
// to its own variables, so a late end cannot disturb the results).
func measure[T any](ctx context.Context, s stepper, f func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	t := time.Now()
	select {
	case <-s.abort:
		var zero T
		return zero, errors.New("the run was stopped")
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // on an abandoned f, its calls that wait with ctx return
	done := make(chan result, 1)
	go func() {
		v, err := f(ctx)
		done <- result{v: v, err: err}
	}()
	var limit <-chan time.Time
	if s.limit > 0 {
		limit = time.After(s.limit)
	}
	var res result
	select {
	case res = <-done:
	case <-limit:
		res.err = fmt.Errorf("did not finish within %v: %w", s.limit, ErrAbandoned)
	case <-s.abort:
		res.err = errors.New("the run was stopped: abandoned")
	}
	if res.err != nil {
		s.r.Errors[s.scenario+"/"+s.peer] = res.err
	}
	fmt.Fprintf(s.log, "%-12s %-12s %6.1fs %v\n", s.scenario, s.peer, time.Since(t).Seconds(), errText(res.err))
	return res.v, res.err
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "error: " + err.Error()
}
