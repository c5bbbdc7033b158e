package chaos

import (
	"strings"
	"time"
)

// A Kind says what an [Event] records.
type Kind string

// The kinds of events a worker records. Each is stamped with [Now] when it
// happened: after the call returned for results, before it began for Invoke.
const (
	Invoke        Kind = "inv"      // a waiting acquire call begins (Mode)
	Queued        Kind = "queued"   // its place in a FIFO queue is confirmed (Err: again, at the end, after it lost its place)
	Handover      Kind = "handover" // the acquisition to come was handed over locally (by a goroutine of the worker)
	Part          Kind = "part"     // a waiting MultiMutex call took some of its names (one slot's), not yet all
	Handed        Kind = "handed"   // the acquisition to come was handed through Redis by a release: its lease, until its first renewal, is its heartbeat deadline
	Acquired      Kind = "acq"      // it returned holding (Mode; Tok for a FencedMutex)
	AcquireFailed Kind = "acqfail"  // it returned an error (Err)
	Enter         Kind = "enter"    // the critical section begins
	Exit          Kind = "exit"     // the critical section ends
	Released      Kind = "rel"      // the release returned (T0 its call; Err when it failed)
	Lost          Kind = "lost"     // the holder saw Done close while holding
	Write         Kind = "write"    // a fenced write was accepted (T0 its call, Tok)
	Stale         Kind = "stale"    // a fenced write was rejected as stale (T0, Tok)
	Parked        Kind = "parked"   // the holder waits in its critical section for a fault
	Leak          Kind = "leak"     // a leak found at the end (R says of what, N how many)
	Quiet         Kind = "quiet"    // the worker stopped and waited out its lingers
	Hushed        Kind = "hushed"   // the worker's hushed slots are idle, as asked (F17, F24)
	Died          Kind = "died"     // the coordinator saw the worker's process end unasked (Err: its exit status and the start of its panic)
	// A Once's and a WaitGroup's own events.
	Completed Kind = "ok"       // a Once's function returned nil (inside its hold, before Exit)
	Finished  Kind = "done"     // a waiting call returned nil without a hold: the Once was done, the WaitGroup at zero
	ResetCall Kind = "resetinv" // a Once's Reset is called
	Reset     Kind = "reset"    // it returned (Err when it failed: it may have run all the same)
	Add       Kind = "add"      // a WaitGroup's Add returned (T0 its call, N the delta; Err when it failed)
)

// Modes of a hold.
const (
	Exclusive = "w" // a Mutex, FencedMutex or FairMutex hold, or a write lock
	Shared    = "r" // a read lock, or a Semaphore permit
)

// An Event is one line of a worker's history.
type Event struct {
	T    int64  `json:"t"`            // when (Now)
	T0   int64  `json:"t0,omitempty"` // when the call began, for results that carry it
	W    int    `json:"w"`            // the worker (one number per process)
	G    int    `json:"g"`            // the worker's goroutine
	K    Kind   `json:"k"`
	R    string `json:"r,omitempty"` // the resource (a lock name)
	Mode string `json:"m,omitempty"`
	Tok  uint64 `json:"tok,omitempty"`
	N    int64  `json:"n,omitempty"`
	Err  string `json:"e,omitempty"`
	// D is how long the call had, from its start (T for Invoke, T0 for
	// results that carry it): its context's timeout, or the Client's call
	// timeout for a call without a context. 0: not checked (I10).
	D int64 `json:"d,omitempty"`
}

// A Fault is one injected fault, recorded by the coordinator.
type Fault struct {
	Kind string `json:"kind"`          // "F1" ... "F9"
	Sub  string `json:"sub,omitempty"` // the variant: "flushdb", "del", "pubsub", ...
	W    int    `json:"w"`             // the worker it targets or whose goroutine is parked, or -1
	G    int    `json:"g"`             // the goroutine parked for it, or -1
	// Global marks a fault of the server, which concerns every worker.
	Global bool   `json:"global,omitempty"`
	R      string `json:"r,omitempty"` // the resource of that goroutine
	Start  int64  `json:"start"`
	End    int64  `json:"end"` // when it was healed; Start for an instant fault
}

// The fault kinds.
var FaultKinds = []string{"F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F13", "F14", "F15", "F16", "F17", "F18", "F19", "F20", "F21", "F22", "F23", "F24"}

// FaultNames describes the fault kinds for reports.
var FaultNames = map[string]string{
	"F1":  "SIGKILL of a holder",
	"F2":  "SIGSTOP of a holder past its lease",
	"F3":  "Redis restart without persistence",
	"F4":  "Redis restart with AOF (appendfsync always)",
	"F5":  "holder cut off from Redis (blackhole)",
	"F6":  "latency and jitter",
	"F7":  "reply of an acquire dropped",
	"F8":  "SCRIPT FLUSH under load",
	"F9":  "DEL/FLUSHDB of lock keys, CLIENT KILL TYPE pubsub",
	"F10": "late delivery: one client connection stalled while the others go on",
	"F13": "planned failover of a busy lock's master (CLUSTER FAILOVER, SENTINEL FAILOVER)",
	"F14": "migration of a busy lock's slot to another master",
	"F15": "SIGKILL of a busy lock's master (unplanned failover; it rejoins as a replica)",
	"F16": "a replica cut off (SIGSTOP) for two leases",
	"F17": "SIGKILL of the waiters queued behind a holder, which then releases",
	"F18": "one quorum server SIGKILLed and restarted empty (no persistence)",
	"F19": "one quorum server SIGKILLed, down for two leases, restarted from its AOF",
	"F20": "one quorum server cut off from one worker (blackhole) for two leases",
	"F21": "one quorum server restarted empty under a hold taken on it and one other only",
	"F22": "one quorum server answers late (past a call's share of it) for two leases",
	"F23": "holder's connections reset and new ones swallowed while its service keeps using the client",
	"F24": "a semaphore's grant read after its lease: one connection's replies held back",
}

// kills reports whether f killed its worker: F1, or F17 (one fault per
// worker killed).
func (f Fault) kills() bool { return f.Kind == "F1" || f.Kind == "F17" }

// breaksLeases reports whether f may let a second holder in while a holder
// still works: the holder was paused (F2) or cut off (F5, F23), or the server
// forgot the locks (F3, and F9's deletions, which are F3's data loss without
// the restart), or a failover promoted a replica that had not received every
// acknowledged write: an unplanned one (F15), or a Sentinel's (F13 behind
// sentinels: SENTINEL FAILOVER does not wait for the replica to catch up, and
// the old primary takes writes until it is turned into a replica). Redis
// Cluster's manual failover waits for the replica and pauses the master's
// writes meanwhile: it loses nothing.
func (f Fault) breaksLeases() bool {
	return f.Kind == "F2" || f.cutsOff() || f.losesData()
}

// cutsOff reports whether f cut its worker off from every lock server
// while the process ran on (F5, F23): its parked holder can be told of its
// loss by its own clock before the lease runs out on the server, and so
// must be, before anyone else gets in (model.toldFirst).
func (f Fault) cutsOff() bool { return f.Kind == "F5" || f.Kind == "F23" }

// losesData reports whether f may make Redis forget what it recorded: a
// restart without persistence (F3), a DEL or FLUSHDB (F9), a failover that
// lost acknowledged writes (F15, and a Sentinel's F13).
func (f Fault) losesData() bool {
	switch f.Kind {
	case "F3", "F15":
		return true
	case "F9":
		return f.Sub != "pubsub"
	case "F13":
		return f.Sub == "sentinel"
	}
	return false
}

// quorumServer reports whether f is a fault of one server of a quorum
// (F18-F21). A hold on more than a majority keeps a majority through it; a
// hold on a bare majority (F21 makes one; another hold's leftovers on the
// third server make others) is lost, and its holder must be told before
// anyone else gets in (model.toldFirst).
func (f Fault) quorumServer() bool {
	switch f.Kind {
	case "F18", "F19", "F20", "F21":
		return true
	}
	return false
}

// keepsHold reports whether a holder parked for f keeps its lock through it
// (or, F15, may): the report then measures recovery on any lock rather than
// on the parked one, which nobody else can take before the holder goes on.
// A quorum's holder keeps its lock through the faults of one server
// (F18-F20) unless its hold was on a bare majority; F21's loses it.
func (f Fault) keepsHold() bool {
	switch f.Kind {
	case "F4", "F13", "F14", "F15", "F16", "F18", "F19", "F20":
		return true
	}
	return false
}

// A Resource is a lock the workers contend for.
type Resource struct {
	Name      string `json:"name"`
	Primitive string `json:"primitive"` // a redisync.Primitive* name
	// Shared is how many permits shared holders may take together (a
	// Semaphore's size; unlimited readers of an RWMutex: 0).
	Shared int `json:"shared,omitempty"`
	// Weight is how many of those permits each shared holder takes (1 when
	// 0): a Semaphore whose holders acquire many permits at once admits
	// Shared/Weight of them.
	Weight int `json:"weight,omitempty"`
	// FIFO marks a FairMutex, whose waiters are served in queue order.
	FIFO bool `json:"fifo,omitempty"`
	// Fenced marks a FencedMutex, whose holders write to a Fence.
	Fenced bool `json:"fenced,omitempty"`
	// Fixed marks a lock whose holds have a fixed lease and no watchdog (an
	// ExpirableSemaphore's permits): a holder ends its critical section when
	// its lease ends, by its own clock, and is told of nothing else, so I5
	// does not apply to it.
	Fixed bool `json:"fixed,omitempty"`
	// Unleased marks a lock whose holds no lease ends (a CountingSemaphore's
	// permits, as Redisson's RSemaphore's): a killed holder keeps its
	// permits for good, and nothing tells a holder of a loss, so I3, I5 and
	// I9 leave it alone. Its workers take a new name every epoch (Name +
	// ":" + the epoch's number), so that a count drained by killed holders
	// starves one epoch only; I1 checks each name with this Resource.
	Unleased bool `json:"unleased,omitempty"`
	// With names the lock that every waiter of this one needs too (a
	// MultiMutex's other name): I3 checks the two as one, since such a
	// waiter cannot be served while the other is held, and a holder of
	// either serves the pair.
	With string `json:"with,omitempty"`
}

// Params are the time bounds of a run.
type Params struct {
	Lease    time.Duration // the watchdog timeout of every lock
	Interval time.Duration // the renewal interval (Lease/3)
	// Recovery bounds how long a dead or cut-off party can block others: the
	// longest of the lease, the FairMutex and Semaphore heartbeat timeout and
	// an RWMutex writer's claim.
	Recovery time.Duration
	// RoundTrip is the allowance for one round trip to Redis, scheduling on
	// the loaded machine included.
	RoundTrip time.Duration
	// WakeSlack is I3's allowance beyond a lease, and I9's beyond a
	// heartbeat timeout (500 ms).
	WakeSlack time.Duration
	// Heartbeat is the queued waiters' heartbeat timeout, shorter than the
	// lease; 0 (a history from before I9) leaves I9 unchecked.
	Heartbeat time.Duration `json:",omitempty"`
	// TimerSlack is I5's allowance beyond the end of a cut-off holder's
	// lease (F5, F23): the time from the scheduler's timer firing to the
	// holder's record of Done closing. 0 (a history from before it) means
	// RoundTrip.
	TimerSlack time.Duration `json:",omitempty"`
	// CallSlack is I10's allowance beyond a call's deadline: the library's
	// own slack (the time it waits for a take-back before leaving it to the
	// background) and the worker's stamping of the return on the loaded
	// machine. 0 (a history from before I10) leaves I10 unchecked.
	CallSlack time.Duration `json:",omitempty"`
}

// room returns how many shared holders r admits together: Shared over
// Weight; one for a lock without shared holders (a writer alone).
func (r Resource) room() int {
	if r.Shared == 0 {
		return 1
	}
	return max(1, r.Shared/max(1, r.Weight))
}

// resourceOf returns the Resource of the lock name: rs's entry for it, or,
// for a name of an Unleased lock's epoch (Name + ":<n>"), that lock's.
func resourceOf(rs map[string]Resource, name string) Resource {
	if r, ok := rs[name]; ok {
		return r
	}
	if i := strings.LastIndexByte(name, ':'); i > 0 {
		if r, ok := rs[name[:i]]; ok && r.Unleased {
			return r
		}
	}
	return Resource{}
}
