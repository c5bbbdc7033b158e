package redisync_test

import "testing"

// On a cluster every key and the channel of a FairMutex share the name's
// slot; wake-ups go by SPUBLISH on that node. The FIFO rounds need them: a
// waiter in another Client that missed its turn message would wait out the
// holder's 30 s lease and fail the round.
func TestClusterFairMutex(t *testing.T) {
	tg := clusterTarget(t)
	base := freshName(t)
	names := namesOnEveryMaster(t, tg, base, 1)
	for _, name := range append(names, "{"+base+"}:tagged") {
		fifo(t, tg, name, 20, 1)
	}
	crashFair(t, tg, names[0])
}
