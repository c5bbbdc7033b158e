package layout

// RSemLatchPrefix names the latches of a CountingSemaphore's calls: one per
// acquire call that took permits or gave up ("1" took, "0" gave up: a late
// copy takes nothing), and one per release (a repeat adds nothing), each
// Aux(RSemLatchPrefix, name) + ":" + the call's id, in the counter's slot.
const RSemLatchPrefix = "redisync_rsem_latch"

// RSem is where a CountingSemaphore lives: Redisson's RSemaphore layout. Key,
// the name itself, holds the free permits as a string integer (absent until
// the first use sets it); Channel, Aux(RSemChannelPrefix, name), carries the
// count after each release, which wakes Go and Java waiters alike.
type RSem struct {
	Key, Channel, Latch string
}

// RSemOf returns the layout of the CountingSemaphore called name.
func RSemOf(name string) RSem {
	return RSem{Key: name, Channel: Aux(RSemChannelPrefix, name), Latch: Aux(RSemLatchPrefix, name)}
}

// RPermit is where a semaphore in Redisson's RPermitExpirableSemaphore
// layout lives: Key, the name itself, holds the free permits as a string
// integer; Leases, Tagged(name) + ":" + RPermitTimeoutSuffix, scores each
// taken permit's id by the end of its lease (ms; RPermitNoLease for none);
// Channel is an RSemaphore's. Latch prefixes the latches of redisync's
// calls, as RSem's.
type RPermit struct {
	Key, Leases, Channel, Latch string
}

// RPermitOf returns the RPermitExpirableSemaphore layout of the name.
func RPermitOf(name string) RPermit {
	return RPermit{Key: name, Leases: Tagged(name) + ":" + RPermitTimeoutSuffix, Channel: Aux(RSemChannelPrefix, name),
		Latch: Aux(RSemLatchPrefix, name)}
}
