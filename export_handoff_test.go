package redisync

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
