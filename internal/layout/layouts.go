package layout

import (
	"strconv"
	"strings"
)

// Mutex is where a Mutex or a FencedMutex of one name lives: Redisson's
// RLock and RFencedLock layouts. The lock is a hash at Key with one field
// per hold (see Field) holding the hold count, expiring with the lease.
type Mutex struct {
	Key     string // the lock hash: the name itself
	Channel string // release messages ("0")
	Latch   string // prefix of the holds' latches: Latch:<field>
	Token   string // a FencedMutex's token counter (no expiry)
	Fence   string // the record of a Fence of the same name
	// Queue and Alive are the queue of redisync's waiting calls (our own
	// keys; Redisson ignores them): their hold fields by arrival, and by the
	// server time (ms) after which a waiter counts as dead. Run is when the
	// current run of releases that handed the lock on began (server ms).
	Queue, Alive, Run string
}

// MutexOf returns the layout of the Mutex called name.
func MutexOf(name string) Mutex {
	return Mutex{Key: name, Channel: Aux(MutexChannelPrefix, name), Latch: Aux(UnlockLatchPrefix, name),
		Token: Aux(TokenPrefix, name), Fence: Aux(FencePrefix, name),
		Queue: Aux(MutexQueuePrefix, name), Alive: Aux(MutexAlivePrefix, name), Run: Aux(MutexRunPrefix, name)}
}

// RW is where an RWMutex lives: Redisson's RReadWriteLock layout. The hash
// at Key has "mode" ("read" or "write"), one field per read hold (a Field)
// and one per write hold (a Field with WriteSuffix), each holding its count;
// a read hold with count c has the timeout keys Timeouts(field)+":1" to ":c".
type RW struct {
	Key     string
	Channel string // "1": a write unlock (or the last reader) wakes all
	Writers string // waiting writers' claims (our own; Redisson ignores it)
	Tagged  string // "{name}": the prefix of every reader's timeout keys
	Latch   string
}

// RWOf returns the layout of the RWMutex called name.
func RWOf(name string) RW {
	return RW{Key: name, Channel: Aux(RWChannelPrefix, name), Writers: Aux(RWWritersPrefix, name),
		Tagged: Tagged(name), Latch: Aux(UnlockLatchPrefix, name)}
}

// WriteSuffix ends the field of a write hold.
const WriteSuffix = ":write"

// Timeouts returns the prefix of the timeout keys of the read hold field.
func (l RW) Timeouts(field string) string { return l.Tagged + ":" + field + ":rwlock_timeout" }

// Fair is where a FairMutex lives (our own layout): a hash like Mutex's, a
// queue of waiter ids by arrival, their heartbeats by server-time deadline,
// and wake-ups naming one waiter.
type Fair struct {
	Key, Queue, Alive, Channel, Latch string
}

// FairOf returns the layout of the FairMutex called name.
func FairOf(name string) Fair {
	return Fair{Key: Aux(FairLockPrefix, name), Queue: Aux(FairQueuePrefix, name), Alive: Aux(FairAlivePrefix, name),
		Channel: Aux(FairChannelPrefix, name), Latch: Aux(FairLatchPrefix, name)}
}

// RFair is where a FairMutex in Redisson's RFairLock layout lives: the RLock
// hash at Key (the name itself), Redisson's queue of waiter ids (a list,
// RFairQueuePrefix) and their eviction times (a sorted set,
// RFairTimeoutPrefix); each waiter listens on Channel + ":" + its id. The
// latches of final releases are our own keys.
type RFair struct {
	Key, Queue, Timeouts, Channel, Latch string
}

// RFairOf returns the RFairLock layout of the name.
func RFairOf(name string) RFair {
	return RFair{Key: name, Queue: Aux(RFairQueuePrefix, name), Timeouts: Aux(RFairTimeoutPrefix, name),
		Channel: Aux(MutexChannelPrefix, name), Latch: Aux(FairLatchPrefix, name)}
}

// WaiterChannel is the channel on which the waiter id is woken.
func (l RFair) WaiterChannel(id string) string { return l.Channel + ":" + id }

// Sem is where a Semaphore lives (our own layout); Keys lists its keys in
// the order its scripts take them.
type Sem struct {
	Holders, Leases, Size, Queue, Alive, Want, Channel, Latch string
}

// SemOf returns the layout of the Semaphore called name.
func SemOf(name string) Sem {
	return Sem{Holders: Aux(SemHoldersPrefix, name), Leases: Aux(SemLeasesPrefix, name), Size: Aux(SemSizePrefix, name),
		Queue: Aux(SemQueuePrefix, name), Alive: Aux(SemAlivePrefix, name), Want: Aux(SemWantPrefix, name),
		Channel: Aux(SemChannelPrefix, name), Latch: Aux(SemLatchPrefix, name)}
}

// Keys returns the Semaphore's keys in its scripts' order.
func (l Sem) Keys() []string {
	return []string{l.Holders, l.Leases, l.Size, l.Queue, l.Alive, l.Want, l.Channel, l.Latch}
}

// A Field is a hold's identity, as its hash field (or a Semaphore's holder
// id) says: "<client-uuid>:<n>", with WriteSuffix for a write hold.
// Redisson's own fields have the same shape, n being a thread id.
type Field struct {
	Client string // the holding Client's UUID
	Hold   string // n: the hold (Redisson: the thread)
	Write  bool
}

// ParseField splits a field; ok is false for one of another shape (an
// RWMutex's "mode").
func ParseField(f string) (Field, bool) {
	f, write := strings.CutSuffix(f, WriteSuffix)
	i := strings.LastIndexByte(f, ':')
	if i <= 0 || i == len(f)-1 {
		return Field{}, false
	}
	return Field{Client: f[:i], Hold: f[i+1:], Write: write}, true
}

// String returns the field.
func (f Field) String() string {
	s := f.Client + ":" + f.Hold
	if f.Write {
		s += WriteSuffix
	}
	return s
}

// ParseSemEntry splits a Semaphore holder's entry "<permits>:<version>".
func ParseSemEntry(v string) (permits int64, version uint64, ok bool) {
	p, ver, found := strings.Cut(v, ":")
	n, err1 := strconv.ParseInt(p, 10, 64)
	m, err2 := strconv.ParseUint(ver, 10, 64)
	return n, m, found && err1 == nil && err2 == nil
}

// SemEntry formats a Semaphore holder's entry.
func SemEntry(permits int64, version uint64) string {
	return strconv.FormatInt(permits, 10) + ":" + strconv.FormatUint(version, 10)
}
