package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// workerEnv carries a worker's configuration (JSON) to the re-executed test
// binary.
const workerEnv = "REDISYNC_CHAOS_WORKER"

// A workerConfig is what a worker process needs to know.
type workerConfig struct {
	ID int // the worker's number, unique over the run
	// Init and MasterSet are where its client of the lock servers starts
	// (see clientOption), Proxies the proxy of each lock server.
	Init      []string
	MasterSet string
	Proxies   map[string]string
	Resource  string // the fenced resource's server
	// Replicated says that the lock servers have replicas: one chaos-mutex
	// slot then acquires WithSyncReplicas (see syncSlot).
	Replicated bool
	// Quorum says that Init are the servers of a quorum, each reached by a
	// client of its own, under one redisync.NewQuorum Client; the slots
	// that do not run on a quorum (see quorumSlot) stay idle.
	Quorum bool
	Lease  time.Duration // watchdog timeout (the heartbeat timeout is heartbeat(Lease))
	Seed   uint64
	// Events is the file the worker writes its history to. A file, not a
	// pipe: a worker must never wait for the coordinator to read, or a slow
	// coordinator would stall every worker at once, holders included.
	Events string
}

// The locks every worker contends for, one goroutine per slot. Slots 7 and 8
// share one Mutex handle (one owner), one cycle in three of theirs beginning
// with a TryLock (see tryFirst), so that handovers within a handle and
// TryLock beside waiting calls are exercised too.
var slots = []struct {
	res  string
	mode string
}{
	{"chaos-mutex", Exclusive}, {"chaos-mutex", Exclusive},
	{"chaos-rw", Shared}, {"chaos-rw", Exclusive},
	{"chaos-fair", Exclusive}, {"chaos-fenced", Exclusive}, {"chaos-sem", Shared},
	{"chaos-shared", Exclusive}, {"chaos-shared", Exclusive},
	{"chaos-once", Exclusive}, {"chaos-election", Exclusive},
	// Two MultiMutexes on both names, given in opposite orders, and a Mutex
	// on the second (see multiNames).
	{"chaos-multi-a", Exclusive}, {"chaos-multi-a", Exclusive}, {"chaos-multi-b", Exclusive},
	{"chaos-xsem", Shared}, {"chaos-rfair", Exclusive}, {"chaos-csem", Shared},
	{"chaos-bigsem", Shared}, {plainRes, Exclusive},
}

// plainRes is the lock of the plain slot: a Mutex that one goroutine of
// each worker takes through a Client of its own and releases with Unlock,
// which has no context (its release has a deadline of the Client's own).
// That Client's connections carry nothing else but its renewals, so they
// are idle when a call begins, and rueidis then waits for the reply on the
// connection with the call's deadline as the connection's: on a quorum, a
// server's share of a release that runs out (a late server, F22) ends on
// the connection's deadline and on its context's timer at once. (A busy
// connection waits on the context alone.)
const plainRes = "chaos-plain"

// On replicated lock servers the chaos-mutex slot syncSlot acquires
// WithSyncReplicas(1, syncTimeout), beside the worker's plain handle on the
// same lock: a hold passes between them only when it satisfies the
// receiver's rules, and a synced call refused while its replica lags keeps
// no plain call of its Client from the lock.
const (
	syncSlot    = 1
	syncTimeout = 500 * time.Millisecond
)

// multiNames are the names of the MultiMutex slots, for the slot's number
// modulo 2. A MultiMutex's hold is recorded on each name: on chaos-multi-a by
// its goroutine, on chaos-multi-b by a goroutine number of its own
// (multiAlias), so that I1 and I3 check each name, the second one against a
// Mutex too.
var multiNames = [2][]string{{"chaos-multi-a", "chaos-multi-b"}, {"chaos-multi-b", "chaos-multi-a"}}

// multiAlias is added to a MultiMutex slot's goroutine number to record its
// hold on its second name, with the events of aliased.
const multiAlias = 100

var aliased = []Kind{Invoke, Part, Acquired, AcquireFailed, Enter, Exit, Released, Lost}

// The WaitGroups that every worker's waitGroup goroutine shares are named
// waitGroupName + ":<epoch>"; its goroutines' numbers come after the slots'.
const waitGroupName = "chaos-wg"

// resources describes the locks of slots.
var resources = map[string]Resource{
	"chaos-mutex":  {Name: "chaos-mutex", Primitive: string(redisync.PrimitiveMutex)},
	"chaos-rw":     {Name: "chaos-rw", Primitive: "RWMutex"},
	"chaos-fair":   {Name: "chaos-fair", Primitive: string(redisync.PrimitiveFairMutex), FIFO: true},
	"chaos-fenced": {Name: "chaos-fenced", Primitive: string(redisync.PrimitiveFencedMutex), Fenced: true},
	"chaos-sem":    {Name: "chaos-sem", Primitive: string(redisync.PrimitiveSemaphore), Shared: semSize},
	"chaos-shared": {Name: "chaos-shared", Primitive: string(redisync.PrimitiveMutex)},
	"chaos-once":   {Name: "chaos-once", Primitive: string(redisync.PrimitiveOnce)},
	// An Election's leadership is a hold: a leader's term is its critical
	// section, and one leader at a time is I1.
	"chaos-election": {Name: "chaos-election", Primitive: string(redisync.PrimitiveElection)},
	"chaos-multi-a":  {Name: "chaos-multi-a", Primitive: string(redisync.PrimitiveMultiMutex), With: "chaos-multi-b"},
	"chaos-multi-b":  {Name: "chaos-multi-b", Primitive: string(redisync.PrimitiveMutex)},
	waitGroupName:    {Name: waitGroupName, Primitive: string(redisync.PrimitiveWaitGroup)},
	// A FairMutex in Redisson's RFairLock layout: its own Primitive name, so
	// that I9 leaves it alone (a dead waiter holds its line until the
	// eviction time Redisson's protocol predicts, past a heartbeat timeout:
	// see rfairWait) and the report counts it apart.
	"chaos-rfair": {Name: "chaos-rfair", Primitive: rfairPrimitive, FIFO: true},
	// A CountingSemaphore's permits have no lease: a new name every epoch
	// (see csemEpoch).
	"chaos-csem": {Name: "chaos-csem", Primitive: string(redisync.PrimitiveCountingSemaphore), Shared: semSize, Unleased: true},
	// An ExpirableSemaphore's permit is held for its fixed lease at most.
	"chaos-xsem": {Name: "chaos-xsem", Primitive: string(redisync.PrimitiveExpirableSemaphore), Shared: semSize, Fixed: true},
	// A Semaphore of the largest size whose holders take nearly half of it
	// each: two fit, a third does not (see bigSemWeight).
	plainRes:       {Name: plainRes, Primitive: string(redisync.PrimitiveMutex)},
	"chaos-bigsem": {Name: "chaos-bigsem", Primitive: string(redisync.PrimitiveSemaphore), Shared: redisync.MaxSemaphoreSize, Weight: bigSemWeight},
}

// bigSemWeight is how many permits of chaos-bigsem, a Semaphore of
// redisync.MaxSemaphoreSize (2^53-1), each of its holders takes: 2^52-1, so
// that two holders leave one permit free and a third never fits. Numbers
// this large are where the scripts' arithmetic and their text must be exact
// (Lua prints a number with 14 digits: 4503599627370495 as
// "4.5035996273705e+15", which reads back as 4).
const bigSemWeight = 1<<52 - 1

// csemEpoch is how long the chaos-csem slots use one name ("chaos-csem:<n>",
// n the epoch's number, the same for all workers since Now is the
// machine's): a worker killed holding a permit leaves its epoch's count one
// short for good, by design, as Redisson's RSemaphore does.
const csemEpoch = 3 * time.Second

// rfairPrimitive is chaos-rfair's Primitive in the history.
const rfairPrimitive = "RedissonFairMutex"

// rfairWait is chaos-rfair's WithFairLockWaitTimeout: a dead waiter keeps its
// place until about the lock's lease plus this per waiter ahead of it after
// it queued, within the run's Recovery (I3) for the handful of workers.
const rfairWait = 50 * time.Millisecond

const (
	semSize   = 2
	waitLimit = 20 * time.Second // a waiting call's deadline: far beyond any bound checked
	parkLimit = 30 * time.Second // a parked holder's longest stay
)

// limits returns the deadlines of one lock cycle's calls: a quarter of the
// locks and three quarters of the unlocks get a short one (the others
// waitLimit), so that callers give up on requests still in flight (F10
// delivers them late). Without a fault a release answers well within it.
func limits(rng *rand.Rand) (lock, unlock time.Duration) {
	lock, unlock = waitLimit, waitLimit
	if rng.IntN(4) == 0 {
		lock = time.Duration(50+rng.IntN(250)) * time.Millisecond
	}
	if rng.IntN(4) != 0 {
		unlock = time.Duration(20+rng.IntN(100)) * time.Millisecond
	}
	return lock, unlock
}

// A worker is one process's state.
type worker struct {
	cfg   workerConfig
	out   sync.Mutex // serializes lines
	file  *os.File   // the history
	stop  atomic.Bool
	slots []*slot
	// parkFailed asks the first goroutine whose unlock fails to park at its
	// next acquisition (F10).
	parkFailed atomic.Bool
	// renewals counts renewal rounds with leases in them, once counting is on.
	counting atomic.Bool
	renewals atomic.Int64
	client   *redisync.Client // the lock servers' (see driveWaitGroup)
	// rcs are the worker's rueidis clients of the lock servers, which its
	// service uses too while it runs (F23: see serve); unserve ends it.
	rcs     []rueidis.Client
	unserve chan struct{}
	service sync.WaitGroup
}

// A slot is one goroutine's lock and its parking state.
type slot struct {
	g      int
	res    string
	mode   string
	park   atomic.Bool
	unpark chan struct{}
	rest   atomic.Bool // after its next release, the goroutine pauses for two leases (F17)
	// hush keeps the goroutine from beginning a cycle (F17, F24); hushed
	// says that it waits for the hush to go.
	hush   atomic.Bool
	hushed atomic.Bool
	lock   func(ctx context.Context) (uint64, error)
	unlock func(ctx context.Context) error
	// plain, when set, releases without a context (a Mutex's or a
	// FencedMutex's Unlock, a Semaphore's Release): the cycles whose unlock would get waitLimit
	// call it instead, and every cycle when unlock is nil, so that Unlock's
	// own deadline is exercised (a quorum's release under it meets a late
	// server under F22).
	plain func()
	done  func() <-chan struct{}
	write func(ctx context.Context, token uint64) error // a FencedMutex's write to its Fence
	once  *redisync.Once                                // a Once's slot runs its function instead
	also  string                                        // a MultiMutex's second name, whose events emit repeats
	// epochs, when set, is the base name of an Unleased lock: each cycle's
	// name is epochs + ":<epoch>" (see csemEpoch), set in res by drive.
	epochs string
	// fixed marks a slot whose hold ends with its lease (Resource.Fixed):
	// parked, it leaves its critical section when done closes.
	fixed bool
	// idle marks a slot that does not run on the topology (a quorum's
	// Client makes Mutexes and FencedMutexes only).
	idle bool
	// brief marks a Mutex slot that holds briefly in half its cycles, so
	// that its hold is handed to the worker's other goroutine on the lock
	// without Redis (a local handover) under the faults too.
	brief bool
}

type slotKey struct{}

func itoa(i int) string { return strconv.Itoa(i) }

func (w *worker) emit(e Event) {
	if e.T == 0 {
		e.T = Now()
	}
	e.W = w.cfg.ID
	if e.G < len(w.slots) && w.slots[e.G].also != "" && e.R == w.slots[e.G].res && slices.Contains(aliased, e.K) {
		alias := e
		alias.G, alias.R = e.G+multiAlias, w.slots[e.G].also
		defer w.emit(alias)
	}
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	w.out.Lock()
	defer w.out.Unlock()
	_, _ = w.file.Write(line)
	if e.K == Parked || e.K == Quiet || e.K == Hushed {
		_, _ = os.Stdout.Write(line) // what the coordinator waits for
	}
}

// Observe records the queue confirmations of the worker's calls and counts
// renewal rounds.
func (w *worker) Observe(ctx context.Context, ev redisync.Event) {
	switch ev.Kind {
	case redisync.EventQueued:
		if s, ok := ctx.Value(slotKey{}).(*slot); ok {
			e := Event{G: s.g, K: Queued, R: s.res}
			if ev.Cause != nil { // queued again: its earlier place lapsed
				e.Err = ev.Cause.Error()
			}
			w.emit(e)
		}
	case redisync.EventAcquired:
		s, ok := ctx.Value(slotKey{}).(*slot)
		switch {
		case !ok:
		case ev.LocalHandover:
			w.emit(Event{G: s.g, K: Handover, R: s.res})
		case ev.Handed:
			w.emit(Event{G: s.g, K: Handed, R: s.res})
		case ev.Primitive == redisync.PrimitiveMultiMutex:
			// A MultiMutex reports the names of each slot as it takes
			// them: until its call returns, it holds a part.
			w.emit(Event{G: s.g, K: Part, R: s.res})
		}
	case redisync.EventRenewalBatch:
		if w.counting.Load() && ev.Batch > 0 {
			w.renewals.Add(1)
		}
	}
}

// runWorker is the body of a worker process: drive every slot until told to
// stop, then report leaks.
func runWorker(raw string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	w := &worker{cfg: cfg}
	var err error
	if w.file, err = os.OpenFile(cfg.Events, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	commands := make(chan string, 16)
	go func() { // reads the coordinator's commands until stdin closes
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			commands <- sc.Text()
		}
		close(commands)
	}()
	baseline := runtime.NumGoroutine()
	closeAll, err := w.connect()
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 2
	}
	var wg sync.WaitGroup
	for _, s := range w.slots {
		wg.Go(func() { w.drive(s) })
	}
	if !cfg.Quorum {
		wg.Go(func() { w.driveWaitGroup(len(w.slots)) })
	}
	for cmd := range commands {
		verb, arg, _ := strings.Cut(cmd, " ")
		g, _ := strconv.Atoi(arg)
		switch verb {
		case "park":
			w.slots[g].park.Store(true)
		case "parkfailed":
			w.parkFailed.Store(true)
		case "noparkfailed":
			w.parkFailed.Store(false)
		case "nopark":
			w.slots[g].park.Store(false)
		case "rest":
			w.slots[g].rest.Store(true)
		case "hush": // the MultiMutex slots, or slot g
			for _, s := range w.slots {
				if arg == "" && s.also != "" || arg != "" && s.g == g {
					s.hush.Store(true)
				}
			}
			go w.reportHushed()
		case "unhush":
			for _, s := range w.slots {
				s.hush.Store(false)
			}
		case "serve":
			w.serve()
		case "unserve":
			if w.unserve != nil {
				close(w.unserve)
				w.unserve = nil
			}
		case "unpark":
			select {
			case w.slots[g].unpark <- struct{}{}:
			default:
			}
		case "stop":
			w.stop.Store(true)
			if w.unserve != nil {
				close(w.unserve)
				w.unserve = nil
			}
			wg.Wait()
			w.service.Wait()
			w.quiesce()
		case "exit":
			closeAll()
			n, left := goroutinesLeft(baseline)
			w.emit(Event{K: Leak, R: "goroutines", N: n, Err: "after Close" + left})
			return 0
		}
	}
	return 0
}

// serve starts the worker's service: on every lock server its clients
// reach, a goroutine that sends PING after PING with a 4 s deadline each
// through the same connections as the locks, until unserve closes. Cut
// off (F23), the service's calls make rueidis connect again, and every
// other call on the connection, a renewal included, waits on that
// reconnection, whose deadline is the service's.
func (w *worker) serve() {
	if w.unserve != nil {
		return
	}
	stop := make(chan struct{})
	w.unserve = stop
	for _, rc := range w.rcs {
		for _, node := range rc.Nodes() {
			w.service.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					begun := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), serviceDeadline)
					err := node.Do(ctx, node.B().Ping().Build()).Error()
					cancel()
					if err != nil && time.Since(begun) < 10*time.Millisecond {
						time.Sleep(10 * time.Millisecond) // refused at once: no busy loop
					}
				}
			})
		}
	}
}

// serviceDeadline is the deadline of each of the service's calls (see
// serve): longer than a lease, as a service's own timeouts often are.
const serviceDeadline = 4 * time.Second

// quiesce waits for the subscriptions' linger, counts renewal rounds over two
// intervals (none may have leases in them when nothing is held or queued),
// and reports.
func (w *worker) quiesce() {
	time.Sleep(1500 * time.Millisecond)
	w.counting.Store(true)
	time.Sleep(2 * w.cfg.Lease / 3)
	w.emit(Event{K: Leak, R: "renewal rounds", N: w.renewals.Load(), Err: "after every hold ended"})
	w.emit(Event{K: Quiet})
}

// goroutinesLeft returns how many goroutines are left above baseline,
// allowing the exiting ones two seconds to finish, and, when some are left,
// what every goroutine was doing then (see goroutineSummary).
func goroutinesLeft(baseline int) (int64, string) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := runtime.NumGoroutine() - baseline
		if n <= 0 {
			return 0, ""
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return int64(n), "; the goroutines then: " + goroutineSummary(string(buf))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// goroutineSummary condenses runtime.Stack's dump of every goroutine into
// one line: for each distinct pair of the function a goroutine runs now
// (its innermost frame outside the runtime) and the one that started it, how
// many goroutines share it.
func goroutineSummary(dump string) string {
	counts := map[string]int{}
	var order []string
	for _, g := range strings.Split(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		if len(lines) < 2 {
			continue
		}
		top, created := lines[1], ""
		for i := 1; i < len(lines); i += 2 { // the function lines
			if !strings.HasPrefix(lines[i], "runtime.") && !strings.HasPrefix(lines[i], "created by ") {
				top = lines[i]
				break
			}
		}
		for i, l := range lines {
			if strings.HasPrefix(l, "created by ") {
				created = strings.TrimPrefix(l, "created by ")
				if i+1 < len(lines) {
					created += " at " + strings.TrimSpace(lines[i+1])
				}
			}
		}
		key := top + " <- " + created
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d× %s", counts[k], k)
	}
	return strings.Join(parts, " | ")
}

// connect makes the worker's Clients and slots, and returns what closes them.
func (w *worker) connect() (func(), error) {
	var lockRCs []rueidis.Client
	closeLocks := func() {
		for _, rc := range lockRCs {
			rc.Close()
		}
	}
	c, rcs, err := w.lockClient()
	if err != nil {
		return nil, err
	}
	lockRCs = append(lockRCs, rcs...)
	// The plain slot's Client has connections of its own, which it alone
	// uses (see plainRes).
	pc, rcs, err := w.lockClient()
	if err != nil {
		closeLocks()
		return nil, err
	}
	resRC, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{w.cfg.Resource}, DisableCache: true})
	if err != nil {
		closeLocks()
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rc, err := redisync.New(resRC, redisync.WithLogger(quiet))
	if err != nil {
		return nil, err
	}
	fence := rc.NewFence("chaos-fenced")
	shared := c.NewMutex("chaos-shared")
	for g, sl := range slots {
		s := &slot{g: g, res: sl.res, mode: sl.mode, unpark: make(chan struct{}, 1)}
		switch {
		case w.cfg.Quorum && !quorumSlot(sl.res):
			s.idle = true
		case sl.res == plainRes:
			m := pc.NewMutex(sl.res)
			s.lock = func(ctx context.Context) (uint64, error) { return 0, m.LockContext(ctx) }
			s.plain, s.done = m.Unlock, m.Done
		case sl.res == "chaos-multi-a":
			m := c.NewMultiMutex(multiNames[g%2])
			s.lock = func(ctx context.Context) (uint64, error) { return 0, m.LockContext(ctx) }
			s.unlock, s.done, s.also = m.UnlockContext, m.Done, "chaos-multi-b"
		case sl.res == "chaos-mutex" || sl.res == "chaos-shared" || sl.res == "chaos-multi-b":
			m := shared
			switch {
			case g == syncSlot && w.cfg.Replicated:
				m = c.NewMutex(sl.res, redisync.WithSyncReplicas(1, syncTimeout))
			case sl.res != "chaos-shared":
				m = c.NewMutex(sl.res)
			}
			s.lock = func(ctx context.Context) (uint64, error) { return 0, m.LockContext(ctx) }
			if sl.res == "chaos-shared" {
				s.lock = tryFirst(m)
			}
			s.unlock, s.plain, s.done = m.UnlockContext, m.Unlock, m.Done
			s.brief = sl.res != "chaos-multi-b"
		case sl.res == "chaos-rw" && sl.mode == Shared:
			rw := c.NewRWMutex(sl.res) // its own owner: one owner's read and write holds may overlap
			s.lock = func(ctx context.Context) (uint64, error) { return 0, rw.RLockContext(ctx) }
			s.unlock, s.done = rw.RUnlockContext, rw.Done
		case sl.res == "chaos-rw":
			rw := c.NewRWMutex(sl.res)
			s.lock = func(ctx context.Context) (uint64, error) { return 0, rw.LockContext(ctx) }
			s.unlock, s.done = rw.UnlockContext, rw.Done
		case sl.res == "chaos-fair" || sl.res == "chaos-rfair":
			fm := c.NewFairMutex(sl.res)
			if sl.res == "chaos-rfair" {
				fm = c.NewRedissonFairMutex(sl.res, redisync.WithFairLockWaitTimeout(rfairWait))
			}
			s.lock = func(ctx context.Context) (uint64, error) { return 0, fm.LockContext(ctx) }
			s.unlock, s.done = fm.UnlockContext, fm.Done
		case sl.res == "chaos-fenced":
			fm := c.NewFencedMutex(sl.res)
			s.lock = fm.LockToken
			s.unlock, s.plain, s.done = fm.UnlockContext, fm.Unlock, fm.Done
			s.write = func(ctx context.Context, tok uint64) error {
				return fence.Set(ctx, tok, strconv.Itoa(w.cfg.ID))
			}
		case sl.res == "chaos-election":
			e := c.NewElection(sl.res)
			value := "worker " + itoa(w.cfg.ID)
			s.lock = func(ctx context.Context) (uint64, error) { return 0, e.Campaign(ctx, value) }
			s.unlock, s.done = e.Resign, e.Done
		case sl.res == "chaos-once":
			s.once = c.NewOnce(sl.res)
			s.done = s.once.Done
		case sl.res == "chaos-csem":
			s.epochs = sl.res
			var cs *redisync.CountingSemaphore
			s.lock = func(ctx context.Context) (uint64, error) {
				cs = c.NewCountingSemaphore(s.res, semSize) // a handle per epoch's name
				return 0, cs.Acquire(ctx, 1)
			}
			s.plain = func() { cs.Release(1) }             // Release takes no context
			s.done = func() <-chan struct{} { return nil } // nothing ends its permit
		case sl.res == "chaos-xsem":
			w.expirable(s, c.NewExpirableSemaphore(sl.res, semSize))
		case sl.res == "chaos-sem" || sl.res == "chaos-bigsem":
			size, n := int64(semSize), int64(1)
			if sl.res == "chaos-bigsem" {
				size, n = redisync.MaxSemaphoreSize, bigSemWeight
			}
			sem := c.NewSemaphore(sl.res, size)
			s.lock = func(ctx context.Context) (uint64, error) { return 0, sem.Acquire(ctx, n) }
			s.plain = func() { sem.Release(n) } // Release takes no context
			s.done = sem.Done
		}
		w.slots = append(w.slots, s)
	}
	w.client, w.rcs = c, lockRCs
	lockRCs = append(lockRCs, rcs...)
	return func() {
		_ = c.Close()
		_ = pc.Close()
		_ = rc.Close()
		closeLocks()
		resRC.Close()
	}, nil
}

// lockClient returns a new Client of the lock servers, with the rueidis
// clients it uses.
func (w *worker) lockClient() (*redisync.Client, []rueidis.Client, error) {
	rcs, err := w.lockClients()
	if err != nil {
		return nil, nil, err
	}
	opts := []redisync.Option{redisync.WithWatchdogTimeout(w.cfg.Lease), redisync.WithHeartbeatTimeout(heartbeat(w.cfg.Lease)),
		redisync.WithObserver(w), redisync.WithLogger(slog.New(slog.DiscardHandler))}
	var c *redisync.Client
	if w.cfg.Quorum {
		c, err = redisync.NewQuorum(rcs, opts...)
	} else {
		c, err = redisync.New(rcs[0], opts...)
	}
	if err != nil {
		for _, rc := range rcs {
			rc.Close()
		}
		return nil, nil, err
	}
	return c, rcs, nil
}

// lockClients returns the worker's clients of the lock servers: one, or on a
// quorum one per server, each through the worker's proxies.
func (w *worker) lockClients() ([]rueidis.Client, error) {
	entries := [][]string{w.cfg.Init}
	if w.cfg.Quorum {
		entries = nil
		for _, addr := range w.cfg.Init {
			entries = append(entries, []string{addr})
		}
	}
	var rcs []rueidis.Client
	for _, init := range entries {
		rc, err := rueidis.NewClient(clientOption(init, w.cfg.MasterSet, w.cfg.Proxies))
		if err != nil {
			for _, rc := range rcs {
				rc.Close()
			}
			return nil, err
		}
		rcs = append(rcs, rc)
	}
	return rcs, nil
}

// expirable makes s a slot of the ExpirableSemaphore x: each acquire takes
// one permit leased for the run's lease, and its done closes when that lease
// ends by the worker's clock, counted from before the acquire was sent (the
// server's count starts later, so the worker stops first).
func (w *worker) expirable(s *slot, x *redisync.ExpirableSemaphore) {
	var id string
	var end time.Time
	s.fixed = true
	s.lock = func(ctx context.Context) (uint64, error) {
		begun := time.Now()
		got, err := x.Acquire(ctx, w.cfg.Lease)
		id, end = got, begun.Add(w.cfg.Lease)
		return 0, err
	}
	s.unlock = func(ctx context.Context) error { return x.Release(ctx, id) }
	s.done = func() <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(time.Until(end), func() { close(ch) })
		return ch
	}
}

// heartbeat returns the workers' heartbeat timeout for a lease: a third, so
// that a lock handed to a dead queued waiter, which stays in its name until
// its heartbeat deadline, comes back well before a lease (I9).
func heartbeat(lease time.Duration) time.Duration { return lease / 3 }

// stacksEnv names a directory into which a worker writes every goroutine's
// stack when a lock call is still running 60 ms past its deadline: what an
// I10 violation waits for (RELIABILITY.md, I10).
const stacksEnv = "REDISYNC_CHAOS_STACKS"

// stacksIfLate writes the worker's goroutines' stacks to stacksEnv's
// directory, if set, when slot g's call, whose deadline is d away, has not
// returned 60 ms past it. The caller calls stop when the call returns.
func (w *worker) stacksIfLate(g int, d time.Duration) (stop func()) {
	dir := os.Getenv(stacksEnv)
	if dir == "" {
		return func() {}
	}
	t := time.AfterFunc(d+60*time.Millisecond, func() {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		_ = os.WriteFile(fmt.Sprintf("%s/w%d-g%d-%d.txt", dir, w.cfg.ID, g, Now()), buf, 0o644)
	})
	return func() { t.Stop() }
}

// tryFirst returns the lock function of a slot on the shared handle m: one
// cycle in three begins with a TryLock, as Go's HammerMutex does, and waits
// in LockContext only when it fails.
func tryFirst(m *redisync.Mutex) func(ctx context.Context) (uint64, error) {
	n := 0
	return func(ctx context.Context) (uint64, error) {
		n++
		if n%3 == 0 {
			if ok, err := m.TryLockContext(ctx); ok || err != nil {
				return 0, err
			}
		}
		return 0, m.LockContext(ctx)
	}
}

// drive runs one slot's lock cycles until the worker stops: call, hold for a
// short critical section (or, when parked, until the coordinator says),
// write to the fence with the token if fenced, release.
func (w *worker) drive(s *slot) {
	if s.idle {
		return
	}
	if s.once != nil {
		w.driveOnce(s)
		return
	}
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(s.g)))
	base := context.WithValue(context.Background(), slotKey{}, s)
	for !w.stop.Load() {
		if s.hush.Load() {
			s.hushed.Store(true)
			for s.hush.Load() && !w.stop.Load() {
				time.Sleep(5 * time.Millisecond)
			}
			s.hushed.Store(false)
			continue
		}
		lockLimit, unlockLimit := limits(rng)
		if s.epochs != "" {
			s.res = s.epochs + ":" + strconv.FormatInt(Now()/int64(csemEpoch), 10)
		}
		w.emit(Event{G: s.g, K: Invoke, R: s.res, Mode: s.mode, D: int64(lockLimit)})
		ctx, cancel := context.WithTimeout(base, lockLimit)
		stop := w.stacksIfLate(s.g, lockLimit)
		tok, err := s.lock(ctx)
		stop()
		cancel()
		if err != nil {
			w.emit(Event{G: s.g, K: AcquireFailed, R: s.res, Mode: s.mode, Err: err.Error()})
			time.Sleep(10 * time.Millisecond)
			continue
		}
		w.emit(Event{G: s.g, K: Acquired, R: s.res, Mode: s.mode, Tok: tok})
		w.emit(Event{G: s.g, K: Enter, R: s.res, Mode: s.mode})
		w.fenced(s, tok)
		brief := false
		switch {
		case s.park.CompareAndSwap(true, false):
			w.parked(s)
			w.fenced(s, tok) // a holder back from a fault writes with its old token
		case s.brief && rng.IntN(2) == 0:
			brief = true // no pause after it either: the other goroutine waits
		default:
			time.Sleep(time.Duration(200+rng.IntN(2800)) * time.Microsecond)
		}
		w.emit(Event{G: s.g, K: Exit, R: s.res, Mode: s.mode})
		t0 := Now()
		d := unlockLimit
		if s.plain != nil && (s.unlock == nil || unlockLimit == waitLimit) {
			d = redisync.DefaultCallTimeout * 9 / 8 // a call without a context: the call timeout, up to an eighth more
			s.plain()
			err = nil
		} else {
			ctx, cancel = context.WithTimeout(base, unlockLimit)
			err = s.unlock(ctx)
			cancel()
		}
		e := Event{T0: t0, G: s.g, K: Released, R: s.res, Mode: s.mode, D: int64(d)}
		if err != nil {
			e.Err = err.Error()
		}
		if err != nil && w.parkFailed.CompareAndSwap(true, false) {
			s.park.Store(true) // F10: its release may still be on its way
		}
		w.emit(e)
		if s.rest.CompareAndSwap(true, false) {
			time.Sleep(2 * w.cfg.Lease)
		}
		if !brief {
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		}
	}
}

// reportHushed tells the coordinator once every hushed slot is idle,
// unless the hush is lifted first.
func (w *worker) reportHushed() {
	for {
		hush, hushed := 0, 0
		for _, s := range w.slots {
			if s.hush.Load() {
				hush++
				if s.hushed.Load() || s.idle {
					hushed++
				}
			}
		}
		switch {
		case hush == 0:
			return
		case hushed == hush:
			w.emit(Event{K: Hushed})
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fenced writes to the slot's fence with tok, if it has one.
func (w *worker) fenced(s *slot, tok uint64) {
	if s.write == nil {
		return
	}
	t0 := Now()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	err := s.write(ctx, tok)
	switch {
	case err == nil:
		w.emit(Event{T0: t0, G: s.g, K: Write, R: s.res, Tok: tok})
	case errors.Is(err, redisync.ErrStaleToken):
		w.emit(Event{T0: t0, G: s.g, K: Stale, R: s.res, Tok: tok})
	}
}

// parked holds the lock in the critical section until the coordinator
// unparks the slot, recording when Done closes meanwhile. The holder goes on
// working after a loss, as a paused process would before it looks.
func (w *worker) parked(s *slot) {
	w.emit(Event{G: s.g, K: Parked, R: s.res})
	done := s.done()
	limit := time.NewTimer(parkLimit)
	defer limit.Stop()
	for {
		select {
		case <-done:
			w.emit(Event{G: s.g, K: Lost, R: s.res})
			if s.fixed {
				return // its lease is over: so is its critical section
			}
			done = nil
		case <-s.unpark:
			return
		case <-limit.C:
			return
		}
	}
}

// TestGoroutineSummaryNamesWhatRuns: a leak report names, for each kind of
// goroutine left, the function it waits in and the one that started it.
func TestGoroutineSummaryNamesWhatRuns(t *testing.T) {
	// Two goroutines that differ only in their numbers count as one kind.
	waiting := func(n int) string {
		return fmt.Sprintf(`goroutine %d [select]:
runtime.gopark(0x0)
	/go/src/runtime/proc.go:1 +0x1
github.com/go-redisync/redisync.(*Client).finish(0x0)
	/x/release.go:40 +0x2
created by github.com/go-redisync/redisync.(*engine).background in goroutine 1
	/x/engine.go:50 +0x3
`, n)
	}
	dump := "goroutine 1 [running]:\nmain.main()\n\t/x/main.go:10 +0x1\n\n" + waiting(7) + "\n" + waiting(8)
	got := goroutineSummary(dump)
	want := "1× main.main() <-  | 2× github.com/go-redisync/redisync.(*Client).finish(0x0) <- " +
		"github.com/go-redisync/redisync.(*engine).background in goroutine 1 at /x/engine.go:50 +0x3"
	if got != want {
		t.Fatalf("goroutineSummary:\n got %q\nwant %q", got, want)
	}
}
