package redisync

import "time"

// LongHandoffsForTest lifts the time bound of local handovers (1 ms) until
// restore is called, for tests whose steps may take longer than that on a
// loaded machine.
func LongHandoffsForTest() (restore func()) {
	saved := maxHandoffTime
	maxHandoffTime = time.Hour
	return func() { maxHandoffTime = saved }
}

// ArriveForTest counts a caller on its way to m's handover queue, as a Lock
// blocked behind a round trip of the holder is, until leave is called. An
// Unlock meanwhile parks the hold for it instead of releasing it in Redis.
func ArriveForTest(m *Mutex) (leave func()) {
	h := m.c.ref(holdKey{kind: exclusive, name: m.name, owner: m.owner}, true)
	h.arriving.Add(1)
	return func() {
		h.arriving.Add(-1)
		m.c.unref(h)
	}
}

// ReadRenewEveryForTest sets how often read holds are renewed until restore
// is called.
func ReadRenewEveryForTest(d time.Duration) (restore func()) {
	saved := readRenewEvery
	readRenewEvery = d
	return func() { readRenewEvery = saved }
}

// TransferWaitersForTest returns how many waiting calls of c a hold of the
// lock called name may be handed to.
func TransferWaitersForTest(c *Client, name string) int {
	c.xmu.Lock()
	defer c.xmu.Unlock()
	return len(c.transfers[name])
}
