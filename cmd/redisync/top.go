package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// runTop is "redisync top [flags] [PATTERN]": a view of the busiest locks
// under PATTERN, refreshed every --interval. On a terminal it takes the
// screen and reads keys (topview.go); otherwise, or with --plain, it
// prints a table per refresh.
//
// It only reads: SCAN for the names, the layouts' reads (layout.go) for
// each name, and subscriptions to the locks' channels and, when the server
// has them on, keyspace notifications, which it counts releases from. It
// writes no key and changes no setting; its subscriptions end with it.
func runTop(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, "top", "top [--interval D] [--sort ORDER] [--count N] [--plain] [--rows N] [--max-names N] [connection flags] [PATTERN]")
	var cf connFlags
	cf.register(fs)
	interval := fs.Duration("interval", time.Second, "refresh every `D`")
	sortBy := fs.String("sort", "activity", "first `ORDER`: activity (locks held or waited on first, then acquisitions and releases per second), waiters, held, longest, ttl or name")
	count := fs.Int("count", 0, "stop after `N` refreshes shown (0: until q or Ctrl-C)")
	plain := fs.Bool("plain", false, "print a table each refresh, also on a terminal")
	rows := fs.Int("rows", 20, "with --plain or output that is not a terminal: at most `N` rows a table (0: all)")
	maxNames := fs.Int("max-names", 200, "follow at most `N` lock names")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	pattern, match, err := patternArg(rest)
	if err != nil {
		return err
	}
	if err := checkTopFlags(*interval, *count, *rows, *maxNames, *sortBy); err != nil {
		return err
	}
	opt, err := cf.options()
	if err != nil {
		return err
	}
	rc, err := dial(ctx, opt)
	if err != nil {
		return err
	}
	defer rc.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &topSampler{rc: rc, match: match, pattern: pattern, maxNames: *maxNames, w: &watcher{}}
	notes, err := s.start(ctx, opt.SelectDB, cf.classicPubSub)
	if err != nil {
		return err
	}
	defer s.stop(cancel)
	v := &topView{
		std: std, s: s, model: newTopModel(), sortBy: *sortBy, count: *count, rows: *rows,
		interval: *interval, notes: notes, title: strings.Join(opt.InitAddress, ","), pattern: pattern,
	}
	if f, ok := std.out.(*os.File); ok && !*plain && isTTY(int(f.Fd())) {
		return v.screen(ctx, f)
	}
	return v.plain(ctx)
}

// checkTopFlags checks top's flags' values.
func checkTopFlags(interval time.Duration, count, rows, maxNames int, sortBy string) error {
	switch {
	case interval < 100*time.Millisecond:
		return usagef("--interval must be at least 100ms, got %v", interval)
	case count < 0 || rows < 0:
		return usagef("--count and --rows must not be negative")
	case maxNames < 1:
		return usagef("--max-names must be at least 1, got %d", maxNames)
	}
	return checkSort(sortBy)
}

// rescanEvery is how often top SCANs for names; between scans it learns new
// ones from the locks' messages and keyspace notifications.
const rescanEvery = 5 * time.Second

// topReaders is how many names top reads at once.
const topReaders = 8

// releaseEvents are the channel events (names.go) that tell of a release,
// counted when keyspace notifications are off: a Mutex's release or
// handover, an RWMutex's wake-up (a write unlock or its last reader
// leaving), a FairMutex's next turn (sent only when a waiter is queued),
// a Once's claim ending, an Election's resignation.
var releaseEvents = map[string]bool{"release": true, "handover": true, "turn": true, "done": true, "resign": true}

// A topSampler gathers what top shows: the names under its pattern, their
// data, and the releases counted from events between two refreshes.
type topSampler struct {
	rc       rueidis.Client
	match    func(string) bool
	pattern  string
	maxNames int
	w        *watcher // classifies the locks' messages

	masters []rueidis.Client // scanned; keyspace notifications come from each
	// keyspace: every master has keyspace notifications on, so releases
	// are counted from them (exactly); otherwise from the locks' messages.
	keyspace bool
	sharded  bool // a cluster whose locks publish with SPUBLISH

	mu         sync.Mutex
	released   map[rowKey]int64
	lastEvent  map[string]string    // a main key's last keyspace event
	holds      map[rowKey]int       // holds at the last refresh
	discovered map[string]bool      // names met in events since the last refresh
	touched    map[rowKey]time.Time // each row's last event (renewals aside)
	kinds      map[rowKey]lockKind  // the kind each row's messages tell of

	names    map[string]bool // the names followed
	foreign  map[string]bool // keys under the pattern that are no lock
	lastScan time.Time
	over     int // names found beyond maxNames at the last scan

	wg     sync.WaitGroup
	follow map[string]context.CancelFunc // sharded: each name's subscription
	errs   chan error
}

// start finds the masters and subscribes. It returns notes for the
// operator on what is counted and what cannot be seen.
func (s *topSampler) start(ctx context.Context, db int, classic bool) (notes []string, err error) {
	s.released, s.lastEvent, s.holds = map[rowKey]int64{}, map[string]string{}, map[rowKey]int{}
	s.discovered, s.names, s.foreign = map[string]bool{}, map[string]bool{}, map[string]bool{}
	s.touched, s.kinds = map[rowKey]time.Time{}, map[rowKey]lockKind{}
	s.follow, s.errs = map[string]context.CancelFunc{}, make(chan error, 1)
	cluster := s.rc.Mode() == rueidis.ClientModeCluster
	s.sharded = cluster && !classic
	if s.masters, err = clusterMasters(ctx, s.rc); err != nil {
		return nil, err
	}
	s.keyspace = true
	for _, m := range s.masters {
		if setting, on := keyspaceSetting(ctx, m); !on {
			s.keyspace = false
			notes = append(notes, fmt.Sprintf("keyspace notifications are off (notify-keyspace-events=%q): releases are counted from the locks' messages, which miss leases that run out, an RWMutex's readers but the last, a FairMutex's releases with nobody queued and every Semaphore release; CONFIG SET notify-keyspace-events Khgx makes them exact", setting))
			break
		}
	}
	var patterns []string
	for _, lc := range lockChannels {
		patterns = append(patterns, lc.pattern())
	}
	ks := fmt.Sprintf("__keyspace@%d__:*", db)
	switch {
	case !cluster:
		// One subscription: the lock's messages and its keyspace events
		// come in the server's order.
		if s.keyspace {
			patterns = append(patterns, ks)
		}
		s.receive(ctx, s.rc, s.rc.B().Psubscribe().Pattern(patterns...).Build())
		return notes, nil
	case !s.sharded: // classic Pub/Sub: any node hears every PUBLISH
		s.receive(ctx, s.rc, s.rc.B().Psubscribe().Pattern(patterns...).Build())
	}
	if s.keyspace {
		for _, m := range s.masters {
			s.receive(ctx, m, m.B().Psubscribe().Pattern(ks).Build())
		}
	}
	return notes, nil
}

// clusterMasters returns the clients of the servers that hold data: rc
// itself on a single server or behind Sentinel, each master's on a cluster.
func clusterMasters(ctx context.Context, rc rueidis.Client) ([]rueidis.Client, error) {
	if rc.Mode() != rueidis.ClientModeCluster {
		return []rueidis.Client{rc}, nil
	}
	var masters []rueidis.Client
	nodes := rc.Nodes()
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	slices.Sort(addrs)
	for _, addr := range addrs {
		role, err := nodes[addr].Do(ctx, nodes[addr].B().Role().Build()).ToArray()
		if err != nil {
			return nil, fmt.Errorf("ask %s its role: %w", addr, err)
		}
		if len(role) > 0 {
			if r, _ := role[0].ToString(); r == "master" {
				masters = append(masters, nodes[addr])
			}
		}
	}
	if len(masters) == 0 {
		return nil, fmt.Errorf("no master among the cluster's nodes %s", strings.Join(addrs, ", "))
	}
	return masters, nil
}

// receive runs one subscription until ctx ends; an error before that is
// kept for the view to report.
func (s *topSampler) receive(ctx context.Context, rc rueidis.Client, cmd rueidis.Completed) {
	s.wg.Go(func() {
		if err := rc.Receive(ctx, cmd, s.message); err != nil && ctx.Err() == nil {
			select {
			case s.errs <- fmt.Errorf("subscription ended: %w", err):
			default:
			}
		}
	})
}

// stop ends the subscriptions (cancel ends their context) and waits for them.
func (s *topSampler) stop(cancel context.CancelFunc) {
	cancel()
	s.mu.Lock()
	for _, f := range s.follow {
		f()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// message takes one message: a keyspace notification or a lock's message.
func (s *topSampler) message(msg rueidis.PubSubMessage) {
	if key, ok := strings.CutPrefix(msg.Channel, "__keyspace@"); ok {
		if _, key, ok = strings.Cut(key, "__:"); ok {
			s.keyspaceEvent(key, msg.Message)
		}
		return
	}
	lc, event, name, _, ok := s.w.channel(msg)
	if !ok || !s.match(name) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discovered[name] = true
	k := rowKey{name, lc.group}
	s.touched[k] = time.Now()
	s.kinds[k] = lc.kind
	if !s.keyspace && releaseEvents[event] {
		s.released[k]++
	}
}

// keyspaceEvent counts the releases a keyspace notification tells of. On a
// lock's main key (mainKey) a hold ends with an hdel (its field removed), a
// del (the key deleted; not counted right after an hdel, where it is the
// same release emptying the hash or the script's cleanup after it), or the
// key's expiry or eviction (every hold it had).
func (s *topSampler) keyspaceEvent(key, event string) {
	name, group, ok := mainKey(key)
	if !ok || !s.match(name) {
		return
	}
	k := rowKey{name, group}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discovered[name] = true
	if event != "expire" { // a renewal
		s.touched[k] = time.Now()
	}
	prev := s.lastEvent[key]
	s.lastEvent[key] = event
	switch event {
	case "hdel":
		s.released[k]++
	case "del":
		if prev != "hdel" {
			s.released[k]++
		}
	case "expired", "evicted":
		s.released[k] += int64(max(s.holds[k], 1))
	}
	if event == "del" || event == "expired" || event == "evicted" {
		delete(s.lastEvent, key)
	}
}

// mainKey returns the lock name and detector group of a primitive's main
// key: the key whose hash holds its holds (NAME for a Mutex, FencedMutex or
// RWMutex, and a WaitGroup's counter; redisync_fair:{NAME},
// redisync_sem:{NAME}, redisync_once:{NAME}, redisync_election:{NAME}).
// Other keys (queues, heartbeats, latches, counters, an RWMutex's read
// hold timeouts) are not main keys.
func mainKey(key string) (name, group string, ok bool) {
	for _, p := range []struct{ prefix, group string }{
		{layout.FairLockPrefix + ":", "fair"},
		{layout.SemHoldersPrefix + ":", "sem"},
		{layout.OncePrefix + ":", "once"},
		{layout.ElectionPrefix + ":", "election"},
	} {
		if rest, ok := strings.CutPrefix(key, p.prefix); ok {
			return nameFromAux(rest), p.group, true
		}
	}
	if strings.HasPrefix(key, "redisson_") || strings.HasPrefix(key, "redisync_") || strings.Contains(key, ":rwlock_timeout:") {
		return "", "", false
	}
	return key, "name", true
}

// sample reads every followed name (scanning for names first when due) and
// returns the refresh, with the releases counted since the last.
func (s *topSampler) sample(ctx context.Context, now time.Time) (refresh, error) {
	select {
	case err := <-s.errs:
		return refresh{}, err
	default:
	}
	if s.lastScan.IsZero() || now.Sub(s.lastScan) >= rescanEvery {
		found, err := s.scan(ctx)
		if err != nil {
			return refresh{}, err
		}
		s.lastScan = now
		s.add(found, true)
	}
	s.mu.Lock()
	discovered := s.discovered
	s.discovered = map[string]bool{}
	s.mu.Unlock()
	s.add(discovered, false)
	if s.sharded {
		s.followChannels(ctx)
	}
	names := make([]string, 0, len(s.names))
	for n := range s.names {
		names = append(names, n)
	}
	found, errs := s.readAll(ctx, names)
	r := refresh{at: now, infos: map[rowKey]*lockInfo{}, read: map[string]bool{}, uncounted: !s.keyspace}
	holds, err := s.file(ctx, &r, names, found, errs)
	if err != nil {
		return refresh{}, err
	}
	s.mu.Lock()
	r.released, s.released = s.released, map[rowKey]int64{}
	r.touched, s.touched = s.touched, map[rowKey]time.Time{}
	r.kinds, s.kinds = s.kinds, map[rowKey]lockKind{}
	s.holds = holds
	s.mu.Unlock()
	return r, nil
}

// readAll reads what is stored under each of names, topReaders at a time: a
// name whose key holds data no layout knows gets errNotLock.
func (s *topSampler) readAll(ctx context.Context, names []string) ([][]*lockInfo, []error) {
	found := make([][]*lockInfo, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(topReaders, len(names)) {
		wg.Go(func() {
			for i := range next {
				var keyType string
				found[i], keyType, errs[i] = detectAll(ctx, s.rc, names[i])
				if errs[i] == nil && len(found[i]) == 0 && keyType != "none" {
					found[i] = nil
					errs[i] = errNotLock
				}
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	return found, errs
}

// file puts what readAll found for names into r, by row, forgets the names
// that are no locks, and returns the live holds of each row; it fails on the
// first read that failed.
func (s *topSampler) file(ctx context.Context, r *refresh, names []string, found [][]*lockInfo, errs []error) (map[rowKey]int, error) {
	holds := map[rowKey]int{}
	for i, name := range names {
		switch {
		case errs[i] == errNotLock:
			s.foreign[name] = true
			delete(s.names, name)
			continue
		case errs[i] != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errs[i]
		}
		r.read[name] = true
		for _, info := range found[i] {
			if info.Kind == kindFence {
				continue // a fenced resource's record: no lock
			}
			k := rowKey{name, detectorGroup(info.Kind)}
			r.infos[k] = info
			for _, h := range info.Holders {
				if !h.Lapsed {
					holds[k]++
				}
			}
		}
	}
	return holds, nil
}

// errNotLock marks a name whose key holds data no layout knows.
var errNotLock = errors.New("not a lock")

// detectorGroup returns the group of the detector of kind.
func detectorGroup(kind lockKind) string {
	for _, d := range detectors {
		if d.kind == kind {
			return d.group
		}
	}
	return string(kind) // a kind without a detector is a group of its own
}

// forget stops following the names whose rows are gone, so that the next
// names found take their places.
func (s *topSampler) forget(keep func(name string) bool) {
	for n := range s.names {
		if !keep(n) {
			delete(s.names, n)
		}
	}
}

// add follows the names found, up to maxNames; scanned marks a full scan,
// whose count of names left out is kept for the view's note.
func (s *topSampler) add(found map[string]bool, scanned bool) {
	over := 0
	for n := range found {
		if s.names[n] || s.foreign[n] || !s.match(n) {
			continue
		}
		if len(s.names) >= s.maxNames {
			over++
			continue
		}
		s.names[n] = true
	}
	if scanned {
		s.over = over
	}
}

// scan returns the lock names under the pattern on every master: every
// main key's name (mainKey). With a pattern other than "*", two scans: the
// pattern (keys at NAME) and redisync_* (the other primitives' main keys).
func (s *topSampler) scan(ctx context.Context) (map[string]bool, error) {
	matches := []string{"*"}
	if s.pattern != "*" {
		matches = []string{s.pattern, "redisync_*"}
	}
	names := map[string]bool{}
	for _, m := range s.masters {
		for _, match := range matches {
			var cursor uint64
			for {
				e, err := m.Do(ctx, m.B().Scan().Cursor(cursor).Match(match).Count(1000).Build()).AsScanEntry()
				if err != nil {
					return nil, fmt.Errorf("scan for lock names: %w", err)
				}
				for _, key := range e.Elements {
					if name, _, ok := mainKey(key); ok && s.match(name) {
						names[name] = true
					}
				}
				if cursor = e.Cursor; cursor == 0 {
					break
				}
			}
		}
	}
	return names, nil
}

// followChannels keeps one sharded subscription per followed name to its
// channels (every primitive's, grouped by slot), and ends those of names no
// longer followed.
func (s *topSampler) followChannels(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, cancel := range s.follow {
		if !s.names[name] {
			cancel()
			delete(s.follow, name)
		}
	}
	for name := range s.names {
		if s.follow[name] != nil {
			continue
		}
		fctx, cancel := context.WithCancel(ctx)
		s.follow[name] = cancel
		bySlot := map[string][]string{}
		for _, lc := range lockChannels {
			ch := lc.channel(name)
			bySlot[hashTag(ch)] = append(bySlot[hashTag(ch)], ch)
		}
		for _, chans := range bySlot {
			s.receive(fctx, s.rc, s.rc.B().Ssubscribe().Channel(chans...).Build())
		}
	}
}

// hashTag returns the part of key that Redis Cluster hashes to choose its
// slot: the text between the first "{" and the first "}" after it, when not
// empty; otherwise the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}
