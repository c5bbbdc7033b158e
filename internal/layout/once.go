package layout

import "errors"

// Key and channel prefixes of Once, a layout of redisync's own. Every name is
// Aux(prefix, name), in one slot.
const (
	// OncePrefix names the claim: a hash like a Mutex's, whose one field is
	// the hold of the caller running the function, expiring with its lease.
	OncePrefix = "redisync_once"
	// OnceDonePrefix names the completion: a string (the field of the hold
	// whose function succeeded), without expiry; absent until then.
	OnceDonePrefix = "redisync_once_done"
	// OnceChannelPrefix names the channel on which the end of a claim is
	// published: "1" when the function succeeded, "0" when it did not.
	OnceChannelPrefix = "redisync_once_channel"
	// OnceLatchPrefix names the latches of ended claims, as for a Mutex.
	OnceLatchPrefix = "redisync_once_latch"
)

// Once is where a Once lives.
type Once struct {
	Claim, Done, Channel, Latch string
}

// OnceOf returns the layout of the Once called name.
func OnceOf(name string) Once {
	return Once{Claim: Aux(OncePrefix, name), Done: Aux(OnceDonePrefix, name), Channel: Aux(OnceChannelPrefix, name),
		Latch: Aux(OnceLatchPrefix, name)}
}

// WaitGroupChannelPrefix starts the channel of a WaitGroup, as Redisson's
// RCountDownLatch names it: WaitGroupChannelPrefix + "__{" + name + "}", with
// the braces whatever the name (unlike Aux).
const WaitGroupChannelPrefix = "redisson_countdownlatch__channel"

// WaitGroup is where a WaitGroup lives: Redisson's RCountDownLatch layout. Key,
// the name itself, holds the counter as a string integer (absent: zero);
// the change that brings it to zero deletes it and publishes "0" on Channel.
type WaitGroup struct {
	Key, Channel string
}

// WaitGroupOf returns the layout of the WaitGroup called name.
func WaitGroupOf(name string) WaitGroup {
	return WaitGroup{Key: name, Channel: WaitGroupChannelPrefix + "__{" + name + "}"}
}

// CheckWaitGroup reports whether name can name a WaitGroup: a valid name (see
// Check) whose channel, braced as Redisson braces it, lands in the key's
// cluster slot. That rules out most names containing "{" or "}".
func CheckWaitGroup(name string) error {
	if err := Check(name); err != nil {
		return err
	}
	if l := WaitGroupOf(name); Slot(l.Key) != Slot(l.Channel) {
		return errors.New("the channel Redisson derives from the name would land in another cluster slot than its key")
	}
	return nil
}
