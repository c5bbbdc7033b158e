package layout

import "strings"

// Key and channel names of Election, a layout of redisync's own. Every name
// is Aux(prefix, name), in one slot.
const (
	// ElectionPrefix names the leadership: a hash like a Mutex's, whose hold
	// field "<client-uuid>:<n>" (count 1) is the leader's, expiring with its
	// lease, with two fields more: ElectionValue, the leader's value, and
	// ElectionRev, the number of its latest proclamation (the campaign's is
	// 1; each later one's is higher).
	ElectionPrefix = "redisync_election"
	// ElectionChannelPrefix names the channel on which every change is
	// published: "1" a new leader, "2" a new value, "0" no leader.
	ElectionChannelPrefix = "redisync_election_channel"
	// ElectionLatchPrefix names the latches of ended leaderships, as for a
	// Mutex.
	ElectionLatchPrefix = "redisync_election_latch"

	ElectionValue = "value" // the leader's value: the field of the leadership hash
	ElectionRev   = "rev"   // the leader's latest proclamation: the field of the leadership hash
)

// Election is where an Election lives.
type Election struct {
	Key, Channel, Latch string
}

// ElectionOf returns the layout of the Election called name.
func ElectionOf(name string) Election {
	return Election{Key: Aux(ElectionPrefix, name), Channel: Aux(ElectionChannelPrefix, name),
		Latch: Aux(ElectionLatchPrefix, name)}
}

// Leadership is what the leadership hash of an Election holds: no leader
// when Field is empty.
type Leadership struct {
	Field string // the leader's hold: its identity, fresh for each leadership
	Value string
	Rev   string
}

// ParseLeadership reads a leadership hash given as field-value pairs (HGETALL).
func ParseLeadership(fields map[string]string) Leadership {
	var l Leadership
	for f, v := range fields {
		switch {
		case f == ElectionValue:
			l.Value = v
		case f == ElectionRev:
			l.Rev = v
		case strings.Contains(f, ":"):
			l.Field = f
		}
	}
	return l
}
