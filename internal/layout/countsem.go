package layout

// CountSemLatchPrefix names the latches of a CountingSemaphore's calls: one per
// acquire call that took permits or gave up ("1" took, "0" gave up: a late
// copy takes nothing), and one per release (a repeat adds nothing), each
// Aux(CountSemLatchPrefix, name) + ":" + the call's id, in the counter's slot.
const CountSemLatchPrefix = "redisync_rsem_latch"

// CountSem is where a CountingSemaphore lives: Redisson's RSemaphore layout. Key,
// the name itself, holds the free permits as a string integer (absent until
// the first use sets it); Channel, Aux(CountSemChannelPrefix, name), carries the
// count after each release, which wakes Go and Java waiters alike.
type CountSem struct {
	Key, Channel, Latch string
}

// CountSemOf returns the layout of the CountingSemaphore called name.
func CountSemOf(name string) CountSem {
	return CountSem{Key: name, Channel: Aux(CountSemChannelPrefix, name), Latch: Aux(CountSemLatchPrefix, name)}
}

// ExpirableSem is where a semaphore in Redisson's RPermitExpirableSemaphore
// layout lives: Key, the name itself, holds the free permits as a string
// integer; Leases, Tagged(name) + ":" + ExpirableSemTimeoutSuffix, scores each
// taken permit's id by the end of its lease (ms; ExpirableSemNoLease for none);
// Channel is an RSemaphore's. Latch prefixes the latches of redisync's
// calls, as CountSem's.
type ExpirableSem struct {
	Key, Leases, Channel, Latch string
}

// ExpirableSemOf returns the RPermitExpirableSemaphore layout of the name.
func ExpirableSemOf(name string) ExpirableSem {
	return ExpirableSem{Key: name, Leases: Tagged(name) + ":" + ExpirableSemTimeoutSuffix, Channel: Aux(CountSemChannelPrefix, name),
		Latch: Aux(CountSemLatchPrefix, name)}
}
