package layout

// Key and channel prefixes of FairMutex, a layout of redisync's own (Redisson's
// fair lock evicts live waiters by predicted deadlines, so there is nothing to
// be compatible with). Every name is Aux(prefix, name), in the lock's slot.
const (
	// FairLockPrefix names the lock hash: one field "<client-uuid>:<owner>"
	// holding the hold count, with the lease as its expiry.
	FairLockPrefix = "redisync_fair"
	// FairQueuePrefix names the queue: a sorted set of waiter ids scored by
	// arrival.
	FairQueuePrefix = "redisync_fair_queue"
	// FairAlivePrefix names the heartbeats: a sorted set of waiter ids scored
	// by the server time (ms) after which a waiter counts as dead.
	FairAlivePrefix = "redisync_fair_alive"
	// FairChannelPrefix names the wake-up channel; a message is the id of the
	// one waiter it wakes.
	FairChannelPrefix = "redisync_fair_channel"
	// FairLatchPrefix names the latches of final releases.
	FairLatchPrefix = "redisync_fair_latch"
)
