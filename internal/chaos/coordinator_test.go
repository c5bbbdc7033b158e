package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/scripts"
	"github.com/go-redisync/redisync/internal/state"
)

// A run is the coordinator's state: the servers, the workers, the faults and
// the history recorded so far.
type run struct {
	t       *testing.T
	rng     *rand.Rand
	sched   schedule
	lease   time.Duration
	tp      *topology           // the lock servers, faulted
	res     *redisserver.Server // the fenced resource's server, never faulted
	version string
	seats   []*seat
	nextID  int
	dir     string   // worker logs and histories
	files   []string // the workers' histories, in the order they started

	mu     sync.Mutex
	events []Event // the coordinator's own: leaks it found
	faults []Fault
}

// A seat is a worker's place: its proxies to the lock servers stay while its
// processes come and go (a killed worker is replaced).
type seat struct {
	proxy *proxySet
	p     *proc
}

// A proc is one worker process.
type proc struct {
	id     int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	parked chan int      // goroutines that report being parked
	quiet  chan struct{} // closed when the worker has quiesced
	hushed chan struct{} // the worker's MultiMutex slots are idle, as asked
	done   chan struct{} // closed when its output has been read to the end and it was waited for
	// asked is set before the coordinator kills the process (F1, F17, the
	// end of the run) or tells it to exit: an end it did not ask for is a
	// death (I0). died is set once such a death is recorded; err is the
	// process's exit error, once done is closed.
	asked atomic.Bool
	died  atomic.Bool
	err   error
}

func newRun(t *testing.T, seed int64, kinds []string, lease time.Duration, topology string) *run {
	rng := rand.New(rand.NewPCG(uint64(seed), 9))
	r := &run{t: t, rng: rng, sched: schedule{rng: rng, kinds: kinds}, lease: lease, dir: t.TempDir()}
	r.tp = startTopology(t, topology)
	var err error
	r.res, err = redisserver.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.res.Stop() })
	info, err := r.tp.admin.Do(context.Background(), r.tp.admin.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			r.version = "Redis " + v
		}
	}
	return r
}

// start starts n workers, each behind its own proxies.
func (r *run) start(n int) {
	for range n {
		px, err := startProxies(r.tp.nodes())
		if err != nil {
			r.t.Fatal(err)
		}
		s := &seat{proxy: px}
		r.seats = append(r.seats, s)
		r.t.Cleanup(func() {
			if s.p != nil {
				s.p.kill()
				_ = syscall.Kill(s.p.cmd.Process.Pid, syscall.SIGCONT)
				<-s.p.done
			}
			_ = px.Close()
		})
		r.spawn(s)
	}
}

// spawn starts a worker process on seat s.
func (r *run) spawn(s *seat) {
	r.nextID++
	events := filepath.Join(r.dir, fmt.Sprintf("worker-%d.jsonl", r.nextID))
	r.files = append(r.files, events)
	init, set := r.tp.entry()
	cfg, _ := json.Marshal(workerConfig{ID: r.nextID, Init: init, MasterSet: set, Proxies: s.proxy.addrs,
		Resource: r.res.Addr, Lease: r.lease, Seed: r.rng.Uint64(), Events: events,
		Replicated: r.tp.kind == Cluster || r.tp.kind == Sentinel, Quorum: r.tp.kind == Quorum})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(cfg))
	stderr, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("worker-%d.log", r.nextID)))
	if err != nil {
		r.t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	p := &proc{id: r.nextID, cmd: cmd, stdin: stdin, parked: make(chan int, 16),
		hushed: make(chan struct{}, 1), quiet: make(chan struct{}), done: make(chan struct{})}
	s.p = p
	go r.read(p, stdout)
}

// read follows p's control lines (parked, quiet) until its output ends,
// then waits for the process and, if it ended unasked, records its death.
func (r *run) read(p *proc, out io.Reader) {
	defer close(p.done)
	defer func() {
		p.err = p.cmd.Wait()
		if !p.asked.Load() {
			r.died(p)
		}
	}()
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		switch e.K {
		case Parked:
			select {
			case p.parked <- e.G:
			default:
			}
		case Hushed:
			select {
			case p.hushed <- struct{}{}:
			default:
			}
		case Quiet:
			close(p.quiet)
		}
	}
}

// died records the death of worker p, which ended unasked (I0), with the
// start of what it wrote on its way out (a panic's message and stack, or,
// in a build with the race detector and GORACE=halt_on_error=1, the first
// race it reported).
func (r *run) died(p *proc) {
	t := Now()
	log, _ := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("worker-%d.log", p.id)))
	text := string(log)
	for _, mark := range []string{"panic:", "fatal error:", "WARNING: DATA RACE"} {
		if i := strings.Index(text, mark); i >= 0 {
			text = text[i:]
			break
		}
	}
	if len(text) > 1500 {
		text = text[:1500] + " ..."
	}
	p.died.Store(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{T: t, W: p.id, K: Died, Err: fmt.Sprintf("%v; its stderr: %s", p.err, text)})
}

// kill ends p with SIGKILL, as the coordinator asked.
func (p *proc) kill() {
	p.asked.Store(true)
	_ = p.cmd.Process.Kill()
}

// revive starts a new worker on each seat whose process died unasked, so
// that the run goes on with every seat taken.
func (r *run) revive() {
	for _, s := range r.seats {
		if s.p.died.Load() {
			r.spawn(s)
		}
	}
}

// history reads the workers' histories, each in its own order.
func (r *run) history() []Event {
	var events []Event
	// A long run has tens of millions of events, whose few distinct names,
	// kinds and errors are kept once each.
	strs := map[string]string{}
	intern := func(s *string) {
		if v, ok := strs[*s]; ok {
			*s = v
		} else {
			strs[*s] = *s
		}
	}
	for _, name := range r.files {
		f, err := os.Open(name)
		if err != nil {
			r.t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err == nil { // a line cut by SIGKILL is skipped
				intern(&e.R)
				intern((*string)(&e.K))
				intern(&e.Mode)
				intern(&e.Err)
				events = append(events, e)
			}
		}
		if err := sc.Err(); err != nil {
			r.t.Fatal(err)
		}
		_ = f.Close()
	}
	return events
}

func (p *proc) send(cmd string) { _, _ = fmt.Fprintln(p.stdin, cmd) }

func (r *run) record(f Fault) {
	r.mu.Lock()
	r.faults = append(r.faults, f)
	r.mu.Unlock()
}

// inject runs the fault schedule for d after a quiet warm-up, then lets the
// workers run a little without faults.
func (r *run) inject(d time.Duration) {
	time.Sleep(3 * time.Second)
	for end := time.Now().Add(d); time.Now().Before(end); {
		r.revive()
		r.fault(r.sched.pick())
		time.Sleep(time.Duration(500+r.rng.IntN(1500)) * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
}

// finish stops the workers, checks for leaks and returns the history.
func (r *run) finish() *History {
	for _, s := range r.seats {
		s.p.send("stop")
	}
	for _, s := range r.seats {
		select {
		case <-s.p.quiet:
		case <-s.p.done: // it died (I0)
		case <-time.After(2 * waitLimit):
			r.t.Errorf("worker %d did not stop", s.p.id)
		}
	}
	r.leaks()
	for _, s := range r.seats {
		s.p.asked.Store(true)
		s.p.send("exit")
		<-s.p.done
		if err := s.p.err; err != nil && !s.p.died.Load() {
			log, _ := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("worker-%d.log", s.p.id)))
			r.t.Errorf("worker %d: %v; its stderr:\n%s", s.p.id, err, log)
		}
		s.p = nil
	}
	r.leftKeys()
	r.mu.Lock()
	defer r.mu.Unlock()
	return &History{Events: append(r.history(), r.events...), Faults: r.faults, Resources: resources, End: Now(), Params: Params{
		Lease: r.lease, Interval: r.lease / 3, Recovery: max(r.lease, 3*time.Second),
		RoundTrip: roundTrip, WakeSlack: 500 * time.Millisecond, Heartbeat: heartbeat(r.lease),
		TimerSlack: timerSlack, CallSlack: callSlack}}
}

// roundTrip is the allowance for one round trip to Redis, scheduling on the
// loaded machine included (Params.RoundTrip).
const roundTrip = 100 * time.Millisecond

// callSlack is I10's allowance beyond a call's deadline: the 20 ms the
// library waits for a take-back before it leaves it to the background
// (returnSlack), and the rest the machine's, as for timerSlack: the
// worker's goroutine woken when the call returns and stamping it, on two
// cores shared with the servers and the other workers. A take-back done
// before returning, as the calls did before I10 (up to 2 s), is far beyond.
const callSlack = 100 * time.Millisecond

// timerSlack is I5's allowance for a holder cut off (F5, F23) beyond the
// end of its lease on the server. Its Client counts the hold lost a fiftieth
// of the lease (30 ms of 1.5 s) before the lease ends as reckoned from the
// sending of its last renewal, itself before the cut; what comes after is
// the machine's: the scheduler's timer goroutine woken, Done closed, the
// parked goroutine woken to record it, on two cores shared with the
// servers and the other workers, where a wake-up takes a few milliseconds
// at times and tens under bursts.
const timerSlack = 50 * time.Millisecond

// leaks records the subscriptions left on the lock servers once every worker
// has quiesced (their Clients still open), other than the sentinels' own and
// each open Client's own channel (layout.ClientChannel), which lives as
// long as its Client.
func (r *run) leaks() {
	var left []string
	for _, n := range r.tp.nodes() {
		for _, sub := range []string{"CHANNELS", "SHARDCHANNELS"} {
			for _, ch := range r.list(n.Addr, "PUBSUB", sub) {
				if !strings.HasPrefix(ch, "__sentinel__:") && !strings.HasPrefix(ch, layout.ClientChannelPrefix+":") {
					left = append(left, ch)
				}
			}
		}
	}
	r.leak("subscriptions", left)
}

// list sends a command with an array reply to the server at addr.
func (r *run) list(addr string, args ...string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := redisserver.List(ctx, addr, args...)
	if err != nil {
		r.t.Errorf("%s %v: %v", addr, args, err)
	}
	return out
}

// leftKeys records the keys left on the lock server once the release latches
// have expired, other than token counters, Semaphore sizes, Once completions
// and WaitGroup counters (durable by design), and the long-lived latches of
// holds whose acquire had an unknown outcome and the records of killed
// workers' Clients, which must expire by themselves (one with no expiry is a
// leak).
func (r *run) leftKeys() {
	time.Sleep(5500 * time.Millisecond) // release latches live 5 s
	ctx := context.Background()
	var left []string
	type key struct{ name, addr string } // on a quorum, a name is on several servers
	pttl, done := r.tp.pttl()
	defer done()
	var all []key
	for _, addr := range r.tp.masters(ctx) {
		for _, k := range r.list(addr, "KEYS", "*") {
			all = append(all, key{k, addr})
		}
	}
	for _, kk := range all {
		k, addr := kk.name, kk.addr
		switch {
		case strings.HasPrefix(k, layout.TokenPrefix+":"), strings.HasPrefix(k, layout.SemSizePrefix+":"),
			strings.HasPrefix(k, layout.OnceDonePrefix+":"), k == layout.QuorumMarker:
			// A quorum server's marker lives as long as its data.
		case strings.HasPrefix(k, waitGroupName+":"), k == "chaos-xsem", strings.HasPrefix(k, "chaos-csem:"):
			// A WaitGroup's counter has no lease: a worker killed in a round
			// leaves it up, by design (as Redisson's RCountDownLatch). The
			// semaphores' counts are durable, as Redisson's.
		case k == layout.ExpirableSemOf("chaos-xsem").Leases, k == layout.RFairOf("chaos-rfair").Timeouts:
			// Killed workers' permits whose lease ended, and killed
			// waiters' places in Redisson's fair line past their eviction
			// time: Redisson's protocol gives them back, and evicts them,
			// at the next call, and nobody calls after the run. Any entry
			// still due is a leak.
			if !r.overdue(ctx, k) {
				left = append(left, k)
			}
		case k == layout.RFairOf("chaos-rfair").Queue:
			// The line itself: its entries are the timeouts' (above).
		case strings.HasPrefix(k, layout.ClientChannelPrefix+":"):
			// A Client's record (layout.ClientInfo): a killed worker's stays
			// until its expiry, within a minute. -1: no expiry, a leak.
			if ms, err := pttl(addr, k); err != nil || ms == -1 {
				left = append(left, k)
			}
		case strings.HasPrefix(k, layout.UnlockLatchPrefix+":"), strings.HasPrefix(k, layout.FairLatchPrefix+":"),
			strings.HasPrefix(k, layout.SemLatchPrefix+":"), strings.HasPrefix(k, layout.OnceLatchPrefix+":"),
			strings.HasPrefix(k, layout.ElectionLatchPrefix+":"), strings.HasPrefix(k, layout.CountSemLatchPrefix+":"):
			// -1: no expiry, a leak; -2: it expired after KEYS listed it.
			if ms, err := pttl(addr, k); err != nil || ms == -1 {
				left = append(left, k)
			}
		default:
			left = append(left, k)
		}
	}
	r.leak("keys", left)
}

// overdue reports whether every member of the sorted set k is scored at or
// before the lock server's time now (a lease ended, an eviction time
// passed).
func (r *run) overdue(ctx context.Context, k string) bool {
	admin := r.tp.admin
	now, err := state.ServerMillis(ctx, admin)
	if err != nil {
		r.t.Errorf("TIME: %v", err)
		return false
	}
	n, err := admin.Do(ctx, admin.B().Zcount().Key(k).Min("("+strconv.FormatInt(now, 10)).Max("+inf").Build()).AsInt64()
	if err != nil {
		r.t.Errorf("ZCOUNT %s: %v", k, err)
		return false
	}
	return n == 0
}

func (r *run) leak(what string, left []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{T: Now(), W: 0, K: Leak, R: what, N: int64(len(left)), Err: strings.Join(left, " ")})
}

// acquireScripts are the scripts whose replies F7 drops.
var acquireScripts = []*scripts.Script{scripts.MutexAcquire, scripts.FencedAcquire, scripts.RWReadLock,
	scripts.RWWriteLock, scripts.FairAcquire, scripts.SemAcquire, scripts.ElectionCampaign,
	scripts.MultiAcquire, scripts.RFairAcquire, scripts.ExpirableAcquire}
