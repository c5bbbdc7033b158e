package layout

// Key and channel prefixes of Semaphore, a layout of redisync's own (Redisson's
// plain semaphore keeps no holders, so a crashed holder's permits leak). Every
// name is Aux(prefix, name), in one slot.
const (
	// SemHoldersPrefix names the holders: a hash of holder id ->
	// "<permits>:<version>". A holder id names one term of a handle, from
	// its first acquire to the release of its last permit; the version
	// orders the term's changes (see sem_acquire.lua).
	SemHoldersPrefix = "redisync_sem"
	// SemLeasesPrefix names the holders' leases: a sorted set of holder ids
	// scored by the server time (ms) at which their permits come back.
	SemLeasesPrefix = "redisync_sem_lease"
	// SemSizePrefix names the size, recorded on first use.
	SemSizePrefix = "redisync_sem_size"
	// SemQueuePrefix names the queue: a sorted set of waiter ids by arrival.
	SemQueuePrefix = "redisync_sem_queue"
	// SemAlivePrefix names the waiters' heartbeats, as FairAlivePrefix.
	SemAlivePrefix = "redisync_sem_alive"
	// SemWantPrefix names the requests: a hash of waiter id -> permits wanted.
	SemWantPrefix = "redisync_sem_want"
	// SemChannelPrefix names the wake-up channel; a message is the id of the
	// one waiter it wakes.
	SemChannelPrefix = "redisync_sem_channel"
	// SemLatchPrefix names the latches of ended terms: SemLatchPrefix:
	// {name}:<holder id>, left when a term whose calls had an unknown outcome
	// ends, so that a late copy of its first acquire takes nothing.
	SemLatchPrefix = "redisync_sem_latch"
)
