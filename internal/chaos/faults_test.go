package chaos

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-redisync/redisync/internal/faultproxy"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/scripts"
)

// fault injects one fault of kind k and records it.
func (r *run) fault(k string) {
	s := r.seats[r.rng.IntN(len(r.seats))]
	switch k {
	case "F1", "F2", "F5":
		g, ok := r.park(s)
		if !ok {
			return
		}
		f := Fault{Kind: k, W: s.p.id, G: g, R: slots[g].res, Start: Now()}
		switch k {
		case "F1":
			s.p.kill()
			f.End = Now()
			<-s.p.done
			r.record(f)
			r.spawn(s)
			return
		case "F2":
			_ = syscall.Kill(s.p.cmd.Process.Pid, syscall.SIGSTOP)
			time.Sleep(2 * r.lease)
			f.End = Now()
			_ = syscall.Kill(s.p.cmd.Process.Pid, syscall.SIGCONT)
		case "F5":
			s.proxy.Blackhole(faultproxy.Both, true)
			time.Sleep(2 * r.lease)
			f.End = Now()
			s.proxy.Blackhole(faultproxy.Both, false)
		}
		r.record(f)
		r.unpark(s, g)
	case "F3", "F4":
		g, ok := r.park(s)
		if ok && k == "F4" {
			// A hold handed through Redis lasts to its waiter's heartbeat
			// deadline until its first renewal, half a heartbeat timeout
			// after it was taken at most: the restart comes after that, so
			// that it meets the parked hold with a renewed lease (see
			// restartBeforeRenewal).
			time.Sleep(heartbeat(r.lease)/2 + 200*time.Millisecond)
		}
		f := Fault{Kind: k, Global: true, W: s.p.id, G: -1, Start: Now()}
		if ok {
			f.G, f.R = g, slots[g].res
		}
		if err := r.tp.server.Kill(); err != nil {
			r.t.Error(err)
		}
		if k == "F3" {
			_ = os.RemoveAll(filepath.Join(r.tp.server.Dir, "appendonlydir"))
		}
		if err := r.tp.server.Restart(); err != nil {
			r.t.Fatal(err)
		}
		f.End = Now()
		r.record(f)
		if ok {
			r.unpark(s, g)
		}
	case "F6":
		f := Fault{Kind: k, W: s.p.id, G: -1, Start: Now()}
		s.proxy.SetLatency(faultproxy.Both, 30*time.Millisecond, 50*time.Millisecond)
		time.Sleep(3 * time.Second)
		s.proxy.SetLatency(faultproxy.Both, 0, 0)
		f.End = Now()
		r.record(f)
	case "F7":
		script := r.pickScript(acquireScripts, scripts.QuorumAcquire)
		f := Fault{Kind: k, Sub: script.Name, W: s.p.id, G: -1, Start: Now()}
		before := s.proxy.dropped()
		s.proxy.DropNextReply(script.SHA1)
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && s.proxy.dropped() == before; {
			time.Sleep(5 * time.Millisecond)
		}
		s.proxy.StopDropping()
		f.End = Now()
		r.record(f)
	case "F8":
		f := Fault{Kind: k, Global: true, W: -1, G: -1, Start: Now()}
		for range 10 {
			r.onMasters("SCRIPT", "FLUSH")
			time.Sleep(200 * time.Millisecond)
		}
		f.End = Now()
		r.record(f)
	case "F9":
		r.interfere(s)
	case "F10":
		r.stall(s)
		r.stall(s)
	case "F13", "F14", "F15":
		r.failover(s, k)
	case "F16":
		r.cutReplica()
	case "F17":
		r.killQueued(s)
	case "F18", "F19":
		r.restartOne(s, k)
	case "F20":
		r.cutOne(s)
	case "F21":
		r.restartUnderMinority(s)
	case "F22":
		r.slowOne()
	case "F23":
		r.cutWhileServing(s)
	case "F24":
		r.lateGrant(s)
	}
}

// lateGrants are the semaphores whose grants F24 holds back, each with its
// acquire script and a key that only its own calls of that script name.
var lateGrants = []struct {
	res    string
	script *scripts.Script
	key    string
}{
	{"chaos-sem", scripts.SemAcquire, layout.SemOf("chaos-sem").Holders},
	{"chaos-bigsem", scripts.SemAcquire, layout.SemOf("chaos-bigsem").Holders},
	{"chaos-xsem", scripts.ExpirableAcquire, layout.ExpirableSemOf("chaos-xsem").Leases},
}

// lateGrant injects F24, a grant read after its lease: the connection of
// s's worker that carries its next acquire of a semaphore (-chaos.park's,
// or one at random) delivers no reply from that acquire's on for 1.3
// leases, while the server runs its requests at once: the permits are
// taken, their lease runs out, and the other workers take them meanwhile.
// The grant, read after that, is no hold. The other workers leave that
// semaphore alone until the acquire is sent, so that it finds permits free
// and takes them (else it mostly finds none, and its late reply says so);
// its goroutine parks at its next acquisition, so that a grant taken
// for a hold stays inside while the others come in (an ExpirableSemaphore's
// holder is not parked: it leaves at its fixed lease's end, which such a
// grant has passed). The replies of the worker's other calls on that
// connection come late too, its renewals' among them: a hold of the worker
// may be lost by its Client's clock, and its holder must be told before
// the server lets a rival in (the renewals themselves reached the server;
// see repliesHeld).
func (r *run) lateGrant(s *seat) {
	var aims []int
	for i, lg := range lateGrants {
		if *chaosPark == "" || *chaosPark == lg.res {
			aims = append(aims, i)
		}
	}
	if len(aims) == 0 {
		aims = []int{0, 1, 2} // -chaos.park names another lock: any semaphore
	}
	lg := lateGrants[aims[r.rng.IntN(len(aims))]]
	g := slotOf(lg.res)
	if !r.hushOthers(s, "hush "+itoa(g)) {
		return
	}
	before := s.proxy.stalled()
	resume := s.proxy.StallNextReply(lg.script.SHA1, lg.key)
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && s.proxy.stalled() == before; {
		time.Sleep(2 * time.Millisecond)
	}
	r.unhushOthers(s)
	if s.proxy.stalled() == before {
		resume() // no acquire came
		return
	}
	f := Fault{Kind: "F24", Sub: lg.script.Name, W: s.p.id, G: -1, R: lg.res, Start: Now()} // the stall began a moment ago
	park := !resources[lg.res].Fixed
	if park {
		r.askPark(s, g)
	}
	time.Sleep(r.lease * 13 / 10)
	f.End = Now() // before any held-back reply is read
	resume()
	if park && r.awaitPark(s, g) {
		f.G = g
	}
	r.record(f)
	if f.G >= 0 {
		r.unpark(s, g)
	}
}

// cutWhileServing injects F23: a goroutine of s's worker parks in its
// critical section, the worker's service starts (goroutines that keep
// sending their own commands on the worker's clients of the lock servers,
// a 4 s deadline each, as a service shares its rueidis client with its
// locks), and the worker is cut off: its connections are reset and new
// ones accepted and swallowed, so that rueidis connects again and the
// service's calls wait for that on their own deadline, for two leases. The
// holder must be told of its loss by its Client's clock, before its lease
// can have run out on the server and before a rival gets in, whatever the
// renewals wait for meanwhile.
func (r *run) cutWhileServing(s *seat) {
	g, ok := r.park(s)
	if !ok {
		return
	}
	s.p.send("serve")
	time.Sleep(50 * time.Millisecond) // the service is under way
	s.proxy.Blackhole(faultproxy.Both, true)
	f := Fault{Kind: "F23", W: s.p.id, G: g, R: slots[g].res, Start: Now()} // nothing reaches the server from here on
	s.proxy.ResetAll()
	time.Sleep(2 * r.lease)
	s.proxy.Blackhole(faultproxy.Both, false)
	f.End = Now()
	s.p.send("unserve")
	r.record(f)
	r.unpark(s, g)
}

// slowOne injects F22 on a quorum: one server, at random, answers every
// worker late, its replies coming back after a worker's share of a call on
// it has run out (a tenth of the lease, at least 50 ms, each way), for two
// leases. The workers acquire, renew and release on the two others; their
// releases, Unlock's among them, give up on the late server while their
// calls there are still in flight. (Late to one worker only, it starved
// that worker of the locks, whose every attempt waited for the late share:
// its releases seldom met the late server.)
func (r *run) slowOne() {
	srv := r.tp.quorum[r.rng.IntN(len(r.tp.quorum))]
	f := Fault{Kind: "F22", Sub: srv.Addr, Global: true, W: -1, G: -1, Start: Now()}
	late := max(r.lease/10, 50*time.Millisecond)
	for _, s := range r.seats {
		r.proxyTo(s, srv.Addr).SetLatency(faultproxy.Both, late, 0)
	}
	time.Sleep(2 * r.lease)
	for _, s := range r.seats {
		r.proxyTo(s, srv.Addr).SetLatency(faultproxy.Both, 0, 0)
	}
	f.End = Now()
	r.record(f)
}

// restartUnderMinority injects F21 on a quorum, the attack the restart rule
// is there for: one server is cut off from s's worker, a goroutine of it
// parks in a hold taken on the two others only, and one of those two is
// SIGKILLed and restarted at once without its AOF. The hold is left on one
// server, so it is lost; a rival's majority (the server cut off from the
// holder and the restarted one) must not exist before the holder can be
// told, which the restarted server's abstention ensures. The cut is healed
// after the restart; the holder stays parked for two leases more, so that a
// rival that gets in meets it inside (excused once it was told first).
func (r *run) restartUnderMinority(s *seat) {
	i := r.rng.Perm(len(r.tp.quorum))
	cut, restarted := r.tp.quorum[i[0]], r.tp.quorum[i[1]]
	px := r.proxyTo(s, cut.Addr)
	px.Blackhole(faultproxy.Both, true)
	g, ok := r.park(s)
	f := Fault{Kind: "F21", Sub: restarted.Addr, W: s.p.id, G: -1, Start: Now()}
	if ok {
		f.G, f.R = g, slots[g].res
		if err := restarted.Kill(); err != nil {
			r.t.Error(err)
		}
		_ = os.RemoveAll(filepath.Join(restarted.Dir, "appendonlydir"))
		if err := restarted.Restart(); err != nil {
			r.t.Fatal(err)
		}
	}
	px.Blackhole(faultproxy.Both, false)
	f.End = Now()
	r.record(f)
	if ok {
		time.Sleep(2 * r.lease)
		r.unpark(s, g)
	}
}

// proxyTo returns s's proxy to the server at addr.
func (r *run) proxyTo(s *seat, addr string) *faultproxy.Proxy {
	for _, p := range s.proxy.list {
		if p.Addr() == s.proxy.addrs[addr] {
			return p
		}
	}
	r.t.Fatalf("no proxy to %s", addr)
	return nil
}

// restartOne injects F18 or F19 on a quorum: one server, at random, is
// SIGKILLed while a goroutine of s's worker holds a lock (on it, or on the
// two others), and restarted: at once and empty (F18: a holder's majority
// shrinks to the other two, and the restarted server must not vote until
// every lease it could have granted has run out), or from its AOF two
// leases later (F19: the lock works on the two left meanwhile). Neither
// may let a second holder in.
func (r *run) restartOne(s *seat, k string) {
	g, ok := r.park(s)
	srv := r.tp.quorum[r.rng.IntN(len(r.tp.quorum))]
	f := Fault{Kind: k, Sub: srv.Addr, Global: true, W: s.p.id, G: -1, Start: Now()}
	if ok {
		f.G, f.R = g, slots[g].res
	}
	if err := srv.Kill(); err != nil {
		r.t.Error(err)
	}
	if k == "F18" {
		_ = os.RemoveAll(filepath.Join(srv.Dir, "appendonlydir"))
	} else {
		time.Sleep(2 * r.lease)
	}
	if err := srv.Restart(); err != nil {
		r.t.Fatal(err)
	}
	f.End = Now()
	r.record(f)
	if ok {
		r.unpark(s, g)
	}
}

// cutOne injects F20 on a quorum: one server, at random, is cut off from
// s's worker (a blackhole both ways) for two leases while one of its
// goroutines holds a lock; the worker goes on with the two others.
func (r *run) cutOne(s *seat) {
	g, ok := r.park(s)
	srv := r.tp.quorum[r.rng.IntN(len(r.tp.quorum))]
	f := Fault{Kind: "F20", Sub: srv.Addr, W: s.p.id, G: -1, Start: Now()}
	if ok {
		f.G, f.R = g, slots[g].res
	}
	px := r.proxyTo(s, srv.Addr)
	px.Blackhole(faultproxy.Both, true)
	time.Sleep(2 * r.lease)
	px.Blackhole(faultproxy.Both, false)
	f.End = Now()
	r.record(f)
	if ok {
		r.unpark(s, g)
	}
}

// queuedRes is F17's lock: a Mutex (slot queuedSlot) whose waiters queue in
// Redis, beside the MultiMutexes on it and chaos-multi-a, whose waiters
// never do.
const (
	queuedRes  = "chaos-multi-b"
	queuedSlot = 13
)

// hushOthers asks every worker but s's to leave idle its MultiMutexes
// (what "hush" names) or slot g ("hush g"), and reports whether all of them
// are within a few seconds; if not, it lifts the hush again.
func (r *run) hushOthers(s *seat, what string) bool {
	for _, o := range r.seats {
		if o != s {
			select {
			case <-o.p.hushed:
			default:
			}
			o.p.send(what)
		}
	}
	timeout := time.After(5 * time.Second)
	for _, o := range r.seats {
		if o == s {
			continue
		}
		select {
		case <-o.p.hushed:
		case <-timeout:
			r.unhushOthers(s)
			return false
		}
	}
	return true
}

// unhushOthers lifts hushOthers' hush.
func (r *run) unhushOthers(s *seat) {
	for _, o := range r.seats {
		if o != s {
			o.p.send("unhush")
		}
	}
}

// killQueued injects F17, the death of the waiters queued behind a holder:
// s's worker parks its Mutex holder of queuedRes, so that the
// other workers' Mutex waiters queue in Redis behind it while its own
// MultiMutex waiters wait outside the queue (the other workers' are idle);
// every other worker is killed; a round trip later
// the holder releases, which hands the lock to a dead queued waiter, and
// rests for two leases; the killed workers come back a lease later. Until
// the dead waiter's hold lapses (a heartbeat timeout after its death at
// most) nobody can take the lock, and the waiters outside the queue, the
// only live ones, must take it then (I9), not a lease later.
func (r *run) killQueued(s *seat) {
	if slots[queuedSlot].res != queuedRes {
		r.t.Fatalf("F17: slot %d is on %s, not %s", queuedSlot, slots[queuedSlot].res, queuedRes)
	}
	// The other workers' MultiMutexes stop first: one killed while it held
	// chaos-multi-a and waited for the holder's name would keep that name
	// for a lease, which is I3's matter, not this fault's.
	if !r.hushOthers(s, "hush") {
		return
	}
	for len(s.p.parked) > 0 {
		<-s.p.parked
	}
	s.p.send("park " + itoa(queuedSlot))
	select {
	case g := <-s.p.parked:
		if g != queuedSlot {
			s.p.send("unpark " + itoa(g))
			r.unhushOthers(s)
			return
		}
	case <-time.After(5 * time.Second):
		s.p.send("nopark " + itoa(queuedSlot))
		s.p.send("unpark " + itoa(queuedSlot))
		r.unhushOthers(s)
		return
	}
	// The other workers' waiters queue (within milliseconds). The holder
	// releases early in its hold: the waiters outside the queue, who looked
	// when it took the lock, then sleep most of a lease unless told to look
	// again (the "0" after a handover), well past I9's bound.
	time.Sleep(r.lease / 6)
	s.p.send("rest " + itoa(queuedSlot))
	var killed []*seat
	for _, o := range r.seats {
		if o == s {
			continue
		}
		f := Fault{Kind: "F17", W: o.p.id, G: -1, R: queuedRes, Start: Now()}
		o.p.kill()
		f.End = Now()
		<-o.p.done
		r.record(f)
		killed = append(killed, o)
	}
	// The release begins a run of handovers, as about one in two does (one
	// more than 10 ms into a run leaves the lock free instead, which would
	// hand nothing to the dead): the run's record goes.
	r.del(layout.MutexOf(queuedRes).Run)
	// A death less than a round trip before a release is I3's (an attempt
	// sent before it may land after the release, see promptExcused): the
	// release comes later, well within the dead waiters' heartbeats (renewed
	// every third of one).
	time.Sleep(roundTrip)
	s.p.send("unpark " + itoa(queuedSlot))
	time.Sleep(r.lease)
	for _, o := range killed {
		r.spawn(o)
	}
}

// stall injects F10: the connection of s's worker that carries its next
// release (of a lock taken at random) stops delivering its requests, from
// that release on, for a quarter to two fifths of a lease, while the worker's
// other connections go on. The release arrives after requests the worker
// sends later on the others, often after its caller gave up (the workers
// unlock with short deadlines at times): the late delivery that hold
// identity must make harmless. The first goroutine whose unlock fails
// meanwhile parks at its next acquisition, so that the late release lands
// while it holds. Short enough that no lease runs out, so a violation of I1
// here is never expected. An F10 fault is two such stalls.
func (r *run) stall(s *seat) {
	script := r.pickScript(releaseScripts, scripts.MutexRelease)
	f := Fault{Kind: "F10", Sub: script.Name, W: s.p.id, G: -1, Start: Now()}
	for len(s.p.parked) > 0 {
		<-s.p.parked
	}
	s.p.send("parkfailed")
	resume := s.proxy.StallNext(script.SHA1)
	g, parked := -1, false
	select {
	case g = <-s.p.parked:
		parked = true
		time.Sleep(50 * time.Millisecond) // let the stalled requests land on the parked hold
	case <-time.After(r.lease/4 + time.Duration(r.rng.Int64N(int64(r.lease*3/20)))):
	}
	resume()
	s.p.send("noparkfailed")
	if !parked {
		// One may have been asked to park just now.
		select {
		case g = <-s.p.parked:
			parked = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	f.End = Now()
	if parked {
		f.G, f.R = g, slots[g].res
	}
	r.record(f)
	if parked {
		r.unpark(s, g)
	}
}

// pickScript returns one of list at random, or on a quorum, whose locks run
// other scripts, the quorum's own.
func (r *run) pickScript(list []*scripts.Script, quorum *scripts.Script) *scripts.Script {
	if r.tp.kind == Quorum {
		return quorum
	}
	return list[r.rng.IntN(len(list))]
}

// releaseScripts are the release scripts F10 stalls on: the Mutex's (its
// holders are most of the workers' goroutines) as often as the others.
var releaseScripts = []*scripts.Script{scripts.MutexRelease, scripts.MutexRelease, scripts.MutexRelease,
	scripts.RWWriteUnlock, scripts.RWReadUnlock, scripts.FairRelease}

// interfere injects one of F9's variants: deletes a parked holder's lock
// keys, flushes the database under a parked holder, or kills every Pub/Sub
// connection.
func (r *run) interfere(s *seat) {
	sub := []string{"del", "flushdb", "pubsub"}[r.rng.IntN(3)]
	if sub == "pubsub" {
		f := Fault{Kind: "F9", Sub: sub, Global: true, W: -1, G: -1, Start: Now()}
		for _, n := range r.tp.nodes() {
			r.on(n.Addr, "CLIENT", "KILL", "TYPE", "pubsub")
		}
		f.End = Now()
		r.record(f)
		return
	}
	g, ok := r.park(s)
	if !ok {
		return
	}
	f := Fault{Kind: "F9", Sub: sub, Global: sub == "flushdb", W: s.p.id, G: g, R: slots[g].res, Start: Now()}
	if sub == "flushdb" {
		r.onMasters("FLUSHDB")
	} else {
		r.del(lockKeys(slots[g].res)...)
	}
	f.End = Now() // the command ran between Start and End
	r.record(f)
	r.unpark(s, g)
}

// lockKeys returns the keys that record the holders of a resource.
func lockKeys(res string) []string {
	switch resources[res].Primitive {
	case "FairMutex":
		return []string{layout.Aux(layout.FairLockPrefix, res)}
	case "Semaphore":
		return []string{layout.Aux(layout.SemHoldersPrefix, res), layout.Aux(layout.SemLeasesPrefix, res)}
	case "Once":
		l := layout.OnceOf(res)
		return []string{l.Claim, l.Done}
	case "Election":
		return []string{layout.ElectionOf(res).Key}
	case "CountingSemaphore":
		return []string{res + ":" + strconv.FormatInt(Now()/int64(csemEpoch), 10)} // the epoch's count
	case "ExpirableSemaphore":
		return []string{res, layout.ExpirableSemOf(res).Leases}
	}
	return []string{res}
}

// del deletes keys (of one slot) from the coordinator's own client;
// failures are errors of the run.
func (r *run) del(keys ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.tp.admin.Do(ctx, r.tp.admin.B().Del().Key(keys...).Build()).Error(); err != nil {
		r.t.Errorf("DEL %v: %v", keys, err)
	}
}

// onMasters sends a command to every lock server that is a master now.
func (r *run) onMasters(args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, addr := range r.tp.masters(ctx) {
		r.on(addr, args...)
	}
}

// on sends a command to the lock server at addr; failures are errors of the
// run.
func (r *run) on(addr string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := redisserver.Run(ctx, addr, args...); err != nil {
		r.t.Errorf("%s %v: %v", addr, args, err)
	}
}

// park asks a random goroutine of s's worker to stay in its critical section
// at its next acquisition, and waits until it does.
func (r *run) park(s *seat) (int, bool) {
	g := r.rng.IntN(len(slots))
	for *chaosPark != "" && slots[g].res != *chaosPark || !r.tp.slotRuns(g) {
		g = r.rng.IntN(len(slots))
	}
	r.askPark(s, g)
	return g, r.awaitPark(s, g)
}

// slotOf returns the first slot on res.
func slotOf(res string) int {
	for g, sl := range slots {
		if sl.res == res {
			return g
		}
	}
	panic("chaos: no slot on " + res)
}

// askPark asks goroutine g of s's worker to stay in its critical section at
// its next acquisition.
func (r *run) askPark(s *seat, g int) {
	for len(s.p.parked) > 0 {
		<-s.p.parked
	}
	s.p.send("park " + itoa(g))
}

// awaitPark waits until goroutine g of s's worker, asked to park, does, and
// reports whether it did within 5 s; if not, the request is withdrawn.
func (r *run) awaitPark(s *seat, g int) bool {
	timeout := time.After(5 * time.Second)
	for {
		select {
		case got := <-s.p.parked:
			if got == g {
				return true
			}
		case <-timeout:
			s.p.send("nopark " + itoa(g))
			s.p.send("unpark " + itoa(g))
			return false
		}
	}
}

// unpark lets the parked goroutine go on, once it has had a renewal interval
// and a round trip to notice its loss.
func (r *run) unpark(s *seat, g int) {
	time.Sleep(r.lease/3 + 300*time.Millisecond)
	s.p.send("unpark " + itoa(g))
}
