package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// This file is top's model: the rows it shows and how they change from one
// refresh to the next. It knows nothing of Redis or of the terminal, so it
// is tested with made-up refreshes (top_test.go).

// A rowKey identifies one of top's rows: a lock name and the group of keys
// its primitive uses (layout.go's detector groups: "name" for the Mutex,
// FencedMutex, RWMutex and WaitGroup stored at NAME, "fair", "sem", "once"
// and "election" for the others). A Mutex and a FairMutex of one name are
// two rows.
type rowKey struct{ name, group string }

// groupKind is the kind a row of a group shows before a read of its data
// names it (a lock taken and released between two refreshes is seen only
// through its events).
var groupKind = map[string]lockKind{
	"name": kindMutex, "fair": kindFairMutex, "sem": kindSemaphore, "once": kindOnce, "election": kindElection,
}

// rateWindow is how many refreshes the per-second rates are averaged over.
const rateWindow = 5

// idleRowLife is how long a row whose lock is gone (no key left: released,
// nobody waiting) stays on screen after its last activity.
const idleRowLife = time.Minute

// A topRow is one lock's line.
type topRow struct {
	key  rowKey
	kind lockKind
	// info is the lock as last read; nil while it is not stored (a free
	// Mutex has no key).
	info *lockInfo
	// seen maps each current hold (holdID) to the refresh that first saw
	// it; early marks the holds that were there at top's first refresh,
	// whose real start is earlier.
	seen  map[string]time.Time
	early map[string]bool
	// longest is the longest hold seen (at least, when longestEarly).
	longest      time.Duration
	longestEarly bool
	// samples are the last refreshes' counts, oldest first.
	samples []rateSample
	holds   int // holds at the last refresh
	active  time.Time
	// acquired and released are the totals since the row appeared.
	acquired, released int64
}

// A rateSample is what happened to a row between two refreshes.
type rateSample struct {
	from, at time.Time
	acquired int64
	released int64
}

// holdID identifies a hold across refreshes: its Client and owner (a
// Mutex's owner part is fresh for each acquisition) and its mode.
func holdID(h holderInfo) string { return h.Client + ":" + h.Owner + ":" + h.Mode }

// A topModel is every row, updated once a refresh.
type topModel struct {
	rows      map[rowKey]*topRow
	uncounted bool // refresh.uncounted
	first     bool // no refresh yet: the holds seen at the next started earlier
	last      time.Time
}

func newTopModel() *topModel { return &topModel{rows: map[rowKey]*topRow{}, first: true} }

// A refresh is what one round of reads and events brought: the locks read
// (by row) and the releases counted from events since the last refresh.
type refresh struct {
	at       time.Time
	infos    map[rowKey]*lockInfo
	released map[rowKey]int64
	// touched is each row's last event since the last refresh: a hold
	// first seen in this refresh started no later than it.
	touched map[rowKey]time.Time
	// uncounted: releases come from the locks' messages (keyspace
	// notifications are off), and a Semaphore's are not among them.
	uncounted bool
	// kinds is the kind each row's messages told of, for a row whose data
	// has not been read (a lock taken and given back between two reads).
	kinds map[rowKey]lockKind
	// read lists the names whose data was read this refresh (a row of such
	// a name not among infos is gone); rows not read keep their last data.
	read map[string]bool
}

// update applies a refresh. Acquisitions are not seen directly: between two
// refreshes a lock's acquisitions are its releases plus the change in its
// number of holds, so a lock taken and given back between two reads counts
// once each way.
func (m *topModel) update(r refresh) {
	for k, info := range r.infos {
		if m.rows[k] == nil {
			m.rows[k] = &topRow{key: k, kind: info.Kind, seen: map[string]time.Time{}, early: map[string]bool{}}
		}
	}
	for k, n := range r.released {
		if m.rows[k] == nil && n > 0 {
			m.rows[k] = &topRow{key: k, kind: groupKind[k.group], seen: map[string]time.Time{}, early: map[string]bool{}}
		}
	}
	for k, kind := range r.kinds {
		if row := m.rows[k]; row != nil && row.info == nil && kind != "" && kind != kindMutex {
			row.kind = kind // a Mutex's messages are a FencedMutex's too
		}
	}
	for k, row := range m.rows {
		if !m.updateRow(r, k, row) {
			delete(m.rows, k)
		}
	}
	m.first = false
	m.last = r.at
	m.uncounted = r.uncounted
}

// updateRow brings row k up to date with refresh r, and reports whether it
// stays: a row idle for idleRowLife goes.
func (m *topModel) updateRow(r refresh, k rowKey, row *topRow) bool {
	info, fresh := r.infos[k], r.read[k.name]
	if fresh || info != nil {
		row.info = info
		if info != nil {
			row.kind = info.Kind
		}
	}
	start := r.at
	if t, ok := r.touched[k]; ok && !m.first && t.Before(r.at) {
		start = t
	}
	holds := row.current(r.at, start, m.first)
	released := r.released[k]
	acquired := max(released+int64(holds-row.holds), 0)
	if m.first {
		acquired = 0 // holds already there are not acquisitions seen
	}
	row.holds = holds
	row.acquired += acquired
	row.released += released
	from := m.last
	if m.first {
		from = r.at
	}
	row.samples = append(row.samples, rateSample{from: from, at: r.at, acquired: acquired, released: released})
	if len(row.samples) > rateWindow {
		row.samples = row.samples[1:]
	}
	if row.info != nil || acquired > 0 || released > 0 || row.active.IsZero() {
		row.active = r.at // stored in Redis, or just seen
	}
	return r.at.Sub(row.active) <= idleRowLife
}

// current brings the row's holds up to date at now and returns how many
// there are; a hold not seen before is taken to have started at start.
func (row *topRow) current(now, start time.Time, first bool) int {
	var holders []holderInfo
	if row.info != nil && !row.info.allLapsed() {
		holders = row.info.Holders
	}
	live := map[string]bool{}
	for _, h := range holders {
		if h.Lapsed {
			continue
		}
		id := holdID(h)
		live[id] = true
		if _, ok := row.seen[id]; !ok {
			row.seen[id] = start
			row.early[id] = first
		}
	}
	for id, since := range row.seen {
		held := now.Sub(since)
		if !live[id] {
			delete(row.seen, id)
			delete(row.early, id)
			continue
		}
		if held > row.longest || held == row.longest && row.early[id] {
			row.longest, row.longestEarly = held, row.early[id]
		}
	}
	return len(live)
}

// allLapsed reports a lock whose data says nobody holds it: a Semaphore with
// only lapsed holders. (Other primitives drop a hold with its key or field.)
func (info *lockInfo) allLapsed() bool {
	for _, h := range info.Holders {
		if !h.Lapsed {
			return false
		}
	}
	return len(info.Holders) > 0
}

// waiting is the number of waiters queued in Redis (a Mutex's queued calls,
// a FairMutex's queue, a Semaphore's requests) and an RWMutex's waiting
// writers.
func (row *topRow) waiting() int {
	if row.info == nil {
		return 0
	}
	return len(row.info.Waiters) + len(row.info.WaitingWriters)
}

// rates returns the acquisitions and releases per second over the last
// refreshes (at most rateWindow); ok is false before two refreshes.
func (row *topRow) rates() (acq, rel float64, ok bool) {
	if len(row.samples) == 0 {
		return 0, 0, false
	}
	var a, r int64
	for _, s := range row.samples {
		a += s.acquired
		r += s.released
	}
	secs := row.samples[len(row.samples)-1].at.Sub(row.samples[0].from).Seconds()
	if secs <= 0 {
		return 0, 0, false
	}
	return float64(a) / secs, float64(r) / secs, true
}

// held returns the age of the row's oldest current hold, and whether it
// was there at top's first refresh (then it is at least that old).
func (row *topRow) held(now time.Time) (time.Duration, bool, bool) {
	var oldest time.Time
	early := false
	for id, since := range row.seen {
		if oldest.IsZero() || since.Before(oldest) {
			oldest, early = since, row.early[id]
		}
	}
	if oldest.IsZero() {
		return 0, false, false
	}
	return now.Sub(oldest), early, true
}

// sortKeys are top's orders, by the key that selects each on screen.
var sortKeys = []struct {
	key  byte
	name string
}{
	{'a', "activity"}, {'w', "waiters"}, {'h', "held"}, {'l', "longest"}, {'t', "ttl"}, {'n', "name"},
}

// sortName returns the order selected by key, if any.
func sortName(key byte) (string, bool) {
	for _, s := range sortKeys {
		if s.key == key {
			return s.name, true
		}
	}
	return "", false
}

// checkSort validates a --sort value.
func checkSort(by string) error {
	var names []string
	for _, s := range sortKeys {
		if s.name == by {
			return nil
		}
		names = append(names, s.name)
	}
	return usagef("unknown --sort %q: want one of %s", by, strings.Join(names, ", "))
}

// sorted returns the rows in the order by, busiest (or most waited on,
// longest held, ...) first; reverse turns it around. Ties go by name, then
// kind, so the order is stable between refreshes.
func (m *topModel) sorted(by string, reverse bool) []*topRow {
	rows := make([]*topRow, 0, len(m.rows))
	for _, r := range m.rows {
		rows = append(rows, r)
	}
	metric := func(r *topRow) float64 { return m.metric(r, by) }
	// In the default order a lock held or waited on now comes before a free
	// one, however busy: a lock that churns through short holds is free at
	// most refreshes, and would push the long holds out of sight.
	busy := func(r *topRow) bool { return by == "activity" && (r.holds > 0 || r.waiting() > 0) }
	slices.SortFunc(rows, func(a, b *topRow) int {
		c := 0
		if ba, bb := busy(a), busy(b); ba != bb {
			c = 1
			if ba {
				c = -1
			}
		} else if ma, mb := metric(a), metric(b); ma != mb {
			c = 1
			if ma > mb {
				c = -1
			}
		}
		if c == 0 {
			c = strings.Compare(a.key.name, b.key.name)
		}
		if c == 0 {
			c = strings.Compare(string(a.kind), string(b.kind))
		}
		if reverse {
			c = -c
		}
		return c
	})
	return rows
}

// metric is row r's value in the order by: larger comes first.
func (m *topModel) metric(r *topRow, by string) float64 {
	switch by {
	case "waiters":
		return float64(r.waiting())
	case "held":
		d, _, _ := r.held(m.last)
		return float64(d)
	case "longest":
		return float64(r.longest)
	case "ttl":
		return float64(r.ttl())
	case "name":
		return 0
	}
	acq, rel, _ := r.rates()
	return acq + rel
}

// ttl is the lock's remaining lease in milliseconds: its key's, or for a
// Semaphore the longest of its live holders'; -1 without expiry, 0 when not
// held.
func (r *topRow) ttl() int64 {
	if r.info == nil || r.holds == 0 && r.info.Kind != kindWaitGroup {
		return 0
	}
	ttl := r.info.TTLMillis
	for _, h := range r.info.Holders {
		if !h.Lapsed && h.TTLMillis > ttl {
			ttl = h.TTLMillis
		}
	}
	return ttl
}

// topColumns are the table's headings.
var topColumns = []string{"NAME", "KIND", "HOLDER", "HELD", "TTL", "WAIT", "ACQ/S", "REL/S", "LONGEST"}

// cells returns the row's table cells, in topColumns' order, at now;
// uncounted marks rates counted from the locks' messages, which a
// Semaphore's releases do not send: its rates show as "?".
func (r *topRow) cells(now time.Time, uncounted bool) []string {
	acq, rel, ok := r.rates()
	rate := func(v float64) string {
		switch {
		case uncounted && r.kind == kindSemaphore:
			return "?"
		case !ok:
			return "-"
		}
		return fmt.Sprintf("%.1f", v)
	}
	heldCell := "-"
	if d, early, ok := r.held(now); ok {
		heldCell = shortDuration(d)
		if early {
			heldCell = ">" + heldCell
		}
	}
	longest := "-"
	if r.longest > 0 {
		longest = shortDuration(r.longest)
		if r.longestEarly {
			longest = ">" + longest
		}
	}
	ttl := "-"
	switch ms := r.ttl(); {
	case ms < 0:
		ttl = "none"
	case ms > 0:
		ttl = shortDuration(time.Duration(ms) * time.Millisecond)
	}
	return []string{r.key.name, string(r.kind), r.holder(), heldCell, ttl, fmt.Sprint(r.waiting()), rate(acq), rate(rel), longest}
}

// holder describes who holds the row's lock: the first holder as its
// Client's name (without a record of it, its UUID's first 8 characters) and
// its owner, with how many more
// there are; a Semaphore's holders as their count and the permits taken; a
// WaitGroup's counter; a done Once as "done".
func (r *topRow) holder() string {
	info := r.info
	switch {
	case info == nil:
		return "free"
	case info.Kind == kindWaitGroup && info.Count != nil:
		return fmt.Sprintf("count %d", *info.Count)
	case info.Kind == kindOnce && info.Done != nil && *info.Done:
		return "done"
	case info.Kind == kindRPermitExpirableSemaphore && info.Permits != nil:
		return fmt.Sprintf("%d permits taken", info.Permits.Taken)
	case info.Kind == kindSemaphore && info.Permits != nil && r.holds > 0:
		size := "?"
		if info.Permits.Size != nil {
			size = fmt.Sprint(*info.Permits.Size)
		}
		return fmt.Sprintf("%d %s, %d/%s permits", r.holds, plural(int64(r.holds), "holder", "holders"), info.Permits.Taken, size)
	}
	var live []holderInfo
	for _, h := range info.Holders {
		if !h.Lapsed {
			live = append(live, h)
		}
	}
	if len(live) == 0 {
		return "free"
	}
	h := live[0]
	client := h.ClientName
	if client == "" && len(h.Client) > 8 {
		client = h.Client[:8]
	} else if client == "" {
		client = h.Client
	}
	s := client + ":" + h.Owner
	if h.Mode != "" {
		s += " " + h.Mode
	}
	if len(live) > 1 {
		s += fmt.Sprintf(" +%d", len(live)-1)
	}
	return s
}

// shortDuration formats d to about three significant figures: 850ms, 4.2s,
// 12m5s, 3h20m.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}
