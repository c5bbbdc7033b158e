package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mutexInfo returns a Mutex read with the given holds (client:owner).
func mutexInfo(name string, holds ...string) *lockInfo {
	info := &lockInfo{Name: name, Kind: "Mutex", Locked: len(holds) > 0, TTLMillis: 30000}
	for _, h := range holds {
		info.Holders = append(info.Holders, holderInfo{Client: "c0ffee00-0000-0000-0000-000000000000", Owner: h, Count: 1, TTLMillis: 30000})
	}
	return info
}

// press feeds the keys (bytes, escape sequences whole) to v.
func press(v *topView, keys string) bool {
	ch := make(chan byte, len(keys))
	for i := 0; i < len(keys); i++ {
		ch <- keys[i]
	}
	for len(ch) > 0 {
		if !v.key(<-ch, ch) {
			return false
		}
	}
	return true
}

// The screen's keys: arrows and j/k move the cursor, which stays at its
// place on the screen when the order changes (as top's does); Enter opens
// the detail of the lock under it, Esc closes it; letters change the order;
// q quits.
func TestTopKeys(t *testing.T) {
	m := newTopModel()
	t0 := time.Now()
	m.update(refresh{at: t0, infos: map[rowKey]*lockInfo{
		{"a", "name"}: mutexInfo("a", "1"), {"b", "name"}: mutexInfo("b", "2"), {"c", "name"}: mutexInfo("c", "3"),
	}, read: map[string]bool{"a": true, "b": true, "c": true}})
	v := &topView{model: m, sortBy: "name", height: 30, width: 100}
	require.Equal(t, "a", v.selectedRow().key.name)
	require.True(t, press(v, "\x1b[B"))
	require.Equal(t, "b", v.selectedRow().key.name)
	require.True(t, press(v, "\x1bOB\x1bOB\x1b[B")) // past the end: stays on the last
	require.Equal(t, "c", v.selectedRow().key.name)
	require.True(t, press(v, "k\x1b[A\x1b[A")) // past the top: stays on the first
	require.Equal(t, "a", v.selectedRow().key.name)
	require.True(t, press(v, "j"))
	require.True(t, press(v, "r")) // reversed: c, b, a; the cursor stays second
	require.Equal(t, "b", v.selectedRow().key.name)
	require.True(t, press(v, "j"))
	require.Equal(t, "a", v.selectedRow().key.name)
	require.True(t, press(v, "\r"))
	require.NotNil(t, v.detail)
	require.Equal(t, "a", v.detail.name)
	require.True(t, press(v, "r")) // the detail stays on its lock
	require.Equal(t, "a", v.detail.name)
	require.True(t, press(v, "\x1b"))
	require.Nil(t, v.detail)
	require.True(t, press(v, "w"))
	require.Equal(t, "waiters", v.sortBy)
	require.False(t, press(v, "q"))
}

// cut counts the characters shown, not the control sequences, and keeps
// those.
func TestTopCut(t *testing.T) {
	require.Equal(t, "abc", cut("abcdef", 3))
	require.Equal(t, "\x1b[7mab\x1b[0m", cut("\x1b[7mabcd\x1b[0m", 2))
	require.Equal(t, "\x1b[Hxy", cut("\x1b[Hxyz", 2))
	require.Equal(t, "héé", cut("hééllo", 3))
}

// The model from made-up refreshes: acquisitions are releases plus the
// change in holds; a hold's age counts from its row's last event before the
// refresh that first saw it; holds there at the first refresh are marked as
// older; a lock seen only through its messages gets a row of the kind they
// tell; rows idle for a minute go.
func TestTopModel(t *testing.T) {
	m := newTopModel()
	t0 := time.Now()
	a, b := rowKey{"a", "name"}, rowKey{"b", "name"}
	m.update(refresh{at: t0, infos: map[rowKey]*lockInfo{a: mutexInfo("a", "1")}, read: map[string]bool{"a": true, "b": true}})
	row := m.rows[a]
	require.Equal(t, int64(0), row.acquired, "a hold there at the start is no acquisition seen")
	d, early, ok := row.held(t0)
	require.True(t, ok)
	require.True(t, early)
	require.Zero(t, d)

	// a is handed from hold 1 to hold 2 half a second before the refresh;
	// b is taken and given back twice between refreshes, an RWMutex.
	t1 := t0.Add(time.Second)
	m.update(refresh{at: t1, infos: map[rowKey]*lockInfo{a: mutexInfo("a", "2")}, read: map[string]bool{"a": true, "b": true},
		released: map[rowKey]int64{a: 1, b: 2}, touched: map[rowKey]time.Time{a: t0.Add(500 * time.Millisecond)},
		kinds: map[rowKey]lockKind{b: kindRWMutex}})
	require.Equal(t, [2]int64{1, 1}, [2]int64{row.acquired, row.released})
	d, early, _ = row.held(t1)
	require.Equal(t, 500*time.Millisecond, d)
	require.False(t, early)
	require.Equal(t, lockKind("RWMutex"), m.rows[b].kind)
	require.Equal(t, [2]int64{2, 2}, [2]int64{m.rows[b].acquired, m.rows[b].released})
	require.Equal(t, "free", m.rows[b].holder())

	// a is released: one release, no acquisition.
	t2 := t0.Add(2 * time.Second)
	m.update(refresh{at: t2, infos: map[rowKey]*lockInfo{}, read: map[string]bool{"a": true, "b": true}, released: map[rowKey]int64{a: 1}})
	require.Equal(t, [2]int64{1, 2}, [2]int64{row.acquired, row.released})
	acq, rel, ok := row.rates()
	require.True(t, ok)
	require.InDelta(t, 0.5, acq, 1e-9)
	require.InDelta(t, 1.0, rel, 1e-9)
	require.Equal(t, 500*time.Millisecond, row.longest, "hold 2, from its event to the last refresh that saw it")
	require.Equal(t, []string{"a", "Mutex", "free", "-", "-", "0", "0.5", "1.0", "500ms"}, row.cells(t2, false))

	// By activity: b (2 acquisitions and 2 releases in 2 s: 2.0/s) before
	// a (1.5/s).
	require.Equal(t, []string{"b", "a"}, []string{m.sorted("activity", false)[0].key.name, m.sorted("activity", false)[1].key.name})
	require.Equal(t, "a", m.sorted("name", false)[0].key.name)
	require.Equal(t, "b", m.sorted("name", true)[0].key.name)

	m.update(refresh{at: t2.Add(2 * idleRowLife), read: map[string]bool{"a": true, "b": true}})
	require.Empty(t, m.rows)
}

// shortDuration keeps about three figures.
func TestTopShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234 * time.Microsecond: "1ms", 850 * time.Millisecond: "850ms", 4240 * time.Millisecond: "4.2s",
		725 * time.Second: "12m5s", 3*time.Hour + 20*time.Minute + 10*time.Second: "3h20m",
	} {
		require.Equal(t, want, shortDuration(d), d)
	}
}

// By default a lock held now comes before a free one however busy the free
// one is: a 250 ms hold stays in sight beside locks churning through short
// holds, which are free at most refreshes.
func TestTopDefaultOrderShowsHeldLocksFirst(t *testing.T) {
	m := newTopModel()
	t0 := time.Now()
	churn, long := rowKey{"churn", "name"}, rowKey{"long", "name"}
	m.update(refresh{at: t0, infos: map[rowKey]*lockInfo{long: mutexInfo("long", "1")}, read: map[string]bool{"churn": true, "long": true},
		released: map[rowKey]int64{churn: 1}})
	t1 := t0.Add(time.Second)
	m.update(refresh{at: t1, infos: map[rowKey]*lockInfo{long: mutexInfo("long", "1")}, read: map[string]bool{"churn": true, "long": true},
		released: map[rowKey]int64{churn: 200}})
	acq, rel, _ := m.rows[churn].rates()
	require.Positive(t, acq+rel, "churn is busy")
	rows := m.sorted("activity", false)
	require.Equal(t, []string{"long", "churn"}, []string{rows[0].key.name, rows[1].key.name})
	rows = m.sorted("name", false)
	require.Equal(t, "churn", rows[0].key.name, "other orders are as they were")
	rows = m.sorted("activity", true)
	require.Equal(t, "churn", rows[0].key.name, "reversed")
}
