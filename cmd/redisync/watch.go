package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// runWatch is "redisync watch [--count N] [--duration D] [PATTERN]": it
// prints lock events until interrupted, N events were printed, or D passed.
//
// Releases come from the locks' own Pub/Sub channels, so they are seen on any
// server. Acquisitions, expiries and renewals are only visible through
// keyspace notifications, which watch uses when the server has them on; it
// never changes the server's configuration.
func runWatch(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, "watch", "watch [--count N] [--duration D] [--renewals] [connection flags] [PATTERN]")
	var cf connFlags
	cf.register(fs)
	count := fs.Int("count", 0, "stop after `N` events (0: no limit)")
	duration := fs.Duration("duration", 0, "stop after `D`, such as 30s (0: no limit)")
	renewals := fs.Bool("renewals", false, "also print lease renewals (needs keyspace notifications)")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	pattern, match, err := patternArg(rest)
	if err != nil {
		return err
	}
	if *count < 0 || *duration < 0 {
		return usagef("--count and --duration must not be negative")
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
	if *duration > 0 {
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	w := &watcher{out: std, rc: rc, match: match, limit: *count, renewals: *renewals, stop: cancel, known: map[string]bool{}}
	subs, notes := watchPlan(ctx, rc, opt.SelectDB, pattern, literalPattern(pattern), cf.classicPubSub)
	for _, n := range notes {
		fmt.Fprintln(std.out, "# "+n)
	}
	return w.run(ctx, subs, pattern)
}

// A subscription is one Receive: a client (one node on a cluster) and a
// subscribe command with its number of channels or patterns.
type subscription struct {
	rc    rueidis.Client
	cmd   rueidis.Completed
	count int
}

// watchPlan chooses the subscriptions: the lock channels (PSUBSCRIBE; on a
// cluster, whose locks publish with SPUBLISH, which has no pattern form, an
// SSUBSCRIBE of one lock's channel when PATTERN names one lock, unless
// classic says they publish with PUBLISH, which reaches every node) and,
// where enabled, keyspace notifications (on a cluster, on every node). It
// also returns notes for the operator on what cannot be seen.
func watchPlan(ctx context.Context, rc rueidis.Client, db int, pattern string, literal, classic bool) (subs []subscription, notes []string) {
	cluster := rc.Mode() == rueidis.ClientModeCluster
	sharded := cluster && !classic
	var channels []string
	for _, lc := range lockChannels {
		if !sharded {
			channels = append(channels, lc.pattern())
		} else if literal {
			channels = append(channels, lc.channel(pattern))
		}
	}
	switch {
	case sharded && len(channels) > 0:
		subs = append(subs, subscription{rc: rc, cmd: rc.B().Ssubscribe().Channel(channels...).Build(), count: len(channels)})
	case sharded:
		notes = append(notes, "releases are not shown: on a cluster locks publish with sharded Pub/Sub, which has no pattern subscription; give one lock NAME to see its releases")
	case cluster: // classic: any one node hears every PUBLISH
		subs = append(subs, subscription{rc: rc, cmd: rc.B().Psubscribe().Pattern(channels...).Build(), count: len(channels)})
	default:
		// One PSUBSCRIBE for the lock channels and the keyspace events: one
		// connection delivers them in the order the server produced them,
		// so an acquire never shows after the release that followed it.
		if setting, on := keyspaceSetting(ctx, rc); on {
			channels = append(channels, fmt.Sprintf("__keyspace@%d__:*", db))
		} else {
			notes = append(notes, keyspaceOff("", setting))
		}
		return append(subs, subscription{rc: rc, cmd: rc.B().Psubscribe().Pattern(channels...).Build(), count: len(channels)}), notes
	}
	nodes := rc.Nodes()
	for addr, node := range nodes {
		setting, on := keyspaceSetting(ctx, node)
		if !on {
			notes = append(notes, keyspaceOff(" on "+addr, setting))
			continue
		}
		ks := fmt.Sprintf("__keyspace@%d__:*", db)
		subs = append(subs, subscription{rc: node, cmd: node.B().Psubscribe().Pattern(ks).Build(), count: 1})
	}
	return subs, notes
}

// keyspaceOff is the note for a server (where) without keyspace events.
func keyspaceOff(where, setting string) string {
	return fmt.Sprintf("keyspace notifications are off%s (notify-keyspace-events=%q): acquisitions and expiries are not shown; enable them with CONFIG SET notify-keyspace-events Khgx", where, setting)
}

// keyspaceSetting reads notify-keyspace-events and reports whether keyspace
// events for hashes, generic commands and expiries are all on. A server that
// refuses CONFIG GET (managed services, miniredis) counts as off.
func keyspaceSetting(ctx context.Context, rc rueidis.Client) (string, bool) {
	m, err := rc.Do(ctx, rc.B().ConfigGet().Parameter("notify-keyspace-events").Build()).AsStrMap()
	if err != nil {
		return "unknown: " + err.Error(), false
	}
	v := m["notify-keyspace-events"]
	if !strings.Contains(v, "K") {
		return v, false
	}
	if strings.Contains(v, "A") {
		return v, true
	}
	return v, strings.Contains(v, "h") && strings.Contains(v, "g") && strings.Contains(v, "x")
}

// A watcher turns messages into event lines.
type watcher struct {
	out      *stdio
	rc       rueidis.Client // reads who a line is about (see named)
	match    func(string) bool
	limit    int
	renewals bool
	stop     context.CancelFunc

	mu      sync.Mutex
	printed int
	ready   bool
	known   map[string]bool // keys seen acquired, whose expiry is a lock's
	echoes  map[string]bool // channels whose next "0" is an event's echo (lockChannel.echoed)

	// lines are the events on their way to the printer, in the order of
	// their messages: naming a Client takes a read from Redis, which a
	// message handler, on rueidis's reader, must not wait for.
	lines chan watchLine
}

// A watchLine is one event to print. named, when set, returns its detail
// with the Clients it concerns named, or "" to keep detail.
type watchLine struct {
	event, name, detail string
	named               func(ctx context.Context) string
}

// nameBound bounds the reads that name the Clients of one line.
const nameBound = 200 * time.Millisecond

// run subscribes, prints a header once every subscription is confirmed, and
// prints events until ctx ends. A resubscription after a reconnect is noted,
// since events in between are lost.
func (w *watcher) run(ctx context.Context, subs []subscription, pattern string) error {
	if len(subs) == 0 {
		return errors.New("nothing to watch")
	}
	total := 0
	for _, s := range subs {
		total += s.count
	}
	var confirmed int
	hook := func(s rueidis.PubSubSubscription) {
		if !strings.HasSuffix(s.Kind, "subscribe") || strings.HasSuffix(s.Kind, "unsubscribe") {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if confirmed++; confirmed == total {
			w.ready = true
			fmt.Fprintf(w.out.out, "# watching locks matching %q; Ctrl-C to stop\n", pattern)
		} else if confirmed > total {
			fmt.Fprintf(w.out.out, "# resubscribed to %s (events in between are lost)\n", s.Channel)
		}
	}
	errs := make(chan error, len(subs))
	w.lines = make(chan watchLine, 1024)
	printed := make(chan struct{})
	go w.print(context.WithoutCancel(ctx), printed)
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(func() {
			errs <- s.rc.Receive(rueidis.WithOnSubscriptionHook(ctx, hook), s.cmd, w.handle)
		})
	}
	wg.Wait()
	close(w.lines)
	<-printed
	close(errs)
	for err := range errs {
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("subscription ended: %w", err)
		}
	}
	return nil
}

// handle classifies one message and prints it if it is a lock event.
func (w *watcher) handle(msg rueidis.PubSubMessage) {
	if key, ok := strings.CutPrefix(msg.Channel, "__keyspace@"); ok {
		if _, key, ok = strings.Cut(key, "__:"); ok {
			w.keyspace(key, msg.Message)
		}
		return
	}
	if lc, event, name, detail, ok := w.channel(msg); ok {
		w.queue(event, name, detail, w.naming(lc, event, name, msg.Message))
	}
}

// queue passes an event of a matching name on to the printer.
func (w *watcher) queue(event, name, detail string, named func(context.Context) string) {
	if w.match(name) {
		w.lines <- watchLine{event: event, name: name, detail: detail, named: named}
	}
}

// print prints the queued lines in order, naming their Clients, until the
// queue is closed; then it closes done.
func (w *watcher) print(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for l := range w.lines {
		if l.named != nil {
			nctx, cancel := context.WithTimeout(ctx, nameBound)
			if d := l.named(nctx); d != "" {
				l.detail = d
			}
			cancel()
		}
		w.emit(l.event, l.name, l.detail)
	}
}

// naming returns how to name the Client an event of lc concerns: the new
// holder of a Mutex handed over, the waiter whose turn a FairMutex's message
// gives, or whose request a Semaphore's fits. It is nil for other events.
func (w *watcher) naming(lc *lockChannel, event, name, msg string) func(context.Context) string {
	switch {
	case event == "handover":
		return func(ctx context.Context) string {
			if who := w.holderOf(ctx, name); who != "" {
				return "Mutex: handed to " + who + ", the first live waiter in its queue"
			}
			return ""
		}
	case lc.kind == kindFairMutex || lc.kind == kindSemaphore:
		return func(ctx context.Context) string {
			who := namesOf(ctx, w.rc, []string{layout.ClientOf(msg)})[layout.ClientOf(msg)]
			if who == "" {
				return ""
			}
			if lc.kind == kindFairMutex {
				return "FairMutex: waiter " + msg + " of " + who + " is next"
			}
			return "Semaphore: the request of waiter " + msg + " of " + who + " fits now"
		}
	}
	return nil
}

// holderOf names the Client that holds the lock hash key: "" when none
// does, when its holders are of several Clients, or when its Client has no
// record.
func (w *watcher) holderOf(ctx context.Context, key string) string {
	fields, err := w.rc.Do(ctx, w.rc.B().Hkeys().Key(key).Build()).AsStrSlice()
	if err != nil {
		return ""
	}
	id := ""
	for _, f := range fields {
		if f == "mode" { // an RWMutex's
			continue
		}
		c := layout.ClientOf(f)
		if c == "" || id != "" && c != id {
			return ""
		}
		id = c
	}
	return namesOf(ctx, w.rc, []string{id})[id]
}

// channel classifies a message of a lock channel: the primitive's channel,
// the event, the lock's name and a detail. ok is false for a message that is
// no event: not on a lock channel, or an event's echo.
func (w *watcher) channel(msg rueidis.PubSubMessage) (lc *lockChannel, event, name, detail string, ok bool) {
	if rest, ok := strings.CutPrefix(msg.Channel, mutexChannelPrefix+":"); ok {
		if name, waiter, ok := fairThread(rest); ok {
			return &lockChannels[0], "turn", name, "RFairLock: waiter " + waiter + " is next", true
		}
	}
	for i := range lockChannels {
		lc = &lockChannels[i]
		if name, ok = lc.name(msg.Channel); ok {
			event, detail = lc.describe(msg.Message)
			if lc.echoed != "" && w.echo(msg.Channel, event == lc.echoed, msg.Message == "0") {
				return lc, "", "", "", false
			}
			return lc, event, name, detail, true
		}
	}
	return nil, "", "", "", false
}

// fairThread splits what follows a Mutex channel's prefix when it is the
// channel of one waiter of Redisson's RFairLock: the lock's auxiliary name
// part, ":", and the waiter's "<uuid>:<threadId>". It returns the lock's name
// and the waiter.
func fairThread(rest string) (name, waiter string, ok bool) {
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", false
	}
	if _, err := strconv.ParseUint(rest[i+1:], 10, 64); err != nil {
		return "", "", false
	}
	const uuidLen = 36
	j := i - uuidLen
	if j < 1 || rest[j-1] != ':' || strings.Count(rest[j:i], "-") != 4 {
		return "", "", false
	}
	return nameFromAux(rest[:j-1]), rest[j:], true
}

// echo records whether the next "0" on channel is the echo of an event
// (arm) and reports whether this message is such an echo (zero: a "0").
func (w *watcher) echo(channel string, arm, zero bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	echo := zero && w.echoes[channel]
	if arm {
		if w.echoes == nil {
			w.echoes = make(map[string]bool)
		}
		w.echoes[channel] = true
	} else {
		delete(w.echoes, channel)
	}
	return echo
}

// keyspace handles a keyspace notification: event happened to key.
// Auxiliary keys (latches, counters, named redisson_* or redisync_*, and an
// RWMutex's read hold timeouts "{NAME}:...:rwlock_timeout:<i>") are skipped. A hash write is reported as an acquisition: narrow PATTERN to
// lock names if other hashes match it.
//
// A FairMutex's lock hash redisync_fair:{NAME} is reported under NAME, and
// its deletion as a release: a FairMutex publishes only when a waiter is
// queued, so its channel alone misses releases. So is a Once's claim
// redisync_once:{NAME}. An Election's leadership redisync_election:{NAME}
// is reported only when its lease runs out (a dead leader): the rest comes
// on its channel.
func (w *watcher) keyspace(key, event string) {
	name, kind := key, lockKind("")
	if rest, ok := strings.CutPrefix(key, layout.FairLockPrefix+":"); ok {
		name, kind = nameFromAux(rest), kindFairMutex
	} else if rest, ok := strings.CutPrefix(key, layout.OncePrefix+":"); ok {
		name, kind = nameFromAux(rest), kindOnce // its claim
	} else if rest, ok := strings.CutPrefix(key, layout.ElectionPrefix+":"); ok {
		if event == "expired" {
			w.queue("expire", nameFromAux(rest), "Election: the leader's lease ran out: it stopped renewing", nil)
		}
		return
	} else if strings.HasPrefix(key, "redisson_") || strings.HasPrefix(key, "redisync_") || strings.Contains(key, ":rwlock_timeout:") {
		return // an RWMutex's read hold timeouts are reported through its hash
	}
	switch event {
	case "hset", "hincrby":
		w.mu.Lock()
		w.known[key] = true
		w.mu.Unlock()
		w.queue("acquire", name, string(kind), func(ctx context.Context) string {
			if who := w.holderOf(ctx, key); who != "" {
				return strings.TrimPrefix(string(kind)+": by "+who, ": ")
			}
			return ""
		})
	case "expire":
		if w.renewals {
			w.queue("renew", name, string(kind), nil)
		}
	case "expired":
		w.mu.Lock()
		known := w.known[key]
		delete(w.known, key)
		w.mu.Unlock()
		if known {
			w.queue("expire", name, strings.TrimPrefix(string(kind)+": lease ran out: its holder stopped renewing", ": "), nil)
		}
	case "del":
		w.mu.Lock()
		delete(w.known, key) // a lock's release arrives on its channel
		w.mu.Unlock()
		if kind == kindFairMutex { // a Once's claim's end comes on its channel
			w.queue("release", name, string(kind), nil)
		}
	}
}

// emit prints one event line if name matches, and stops the watch once
// --count events have been printed.
func (w *watcher) emit(event, name, detail string) {
	if !w.match(name) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.limit > 0 && w.printed >= w.limit {
		return
	}
	line := fmt.Sprintf("%s  %-8s %s", time.Now().Format("15:04:05.000"), event, name)
	if detail != "" {
		line += "  (" + detail + ")"
	}
	fmt.Fprintln(w.out.out, line)
	if w.printed++; w.limit > 0 && w.printed >= w.limit {
		w.stop()
	}
}
