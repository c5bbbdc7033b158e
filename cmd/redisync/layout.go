package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// A lockInfo is what inspect reports about one name, and its JSON form. The
// fields a primitive does not have stay empty and are left out of the JSON.
type lockInfo struct {
	Name   string   `json:"name"`
	Kind   lockKind `json:"kind"`
	Key    string   `json:"key"` // the Redis key that identified the layout
	Locked bool     `json:"locked"`
	// TTLMillis is the lock key's remaining lease in milliseconds; -1 when
	// the key has no expiry (set outside redisync), 0 when not locked.
	TTLMillis int64        `json:"ttl_ms"`
	Holders   []holderInfo `json:"holders"`

	// Mode is an RWMutex's "read" or "write".
	Mode string `json:"mode,omitempty"`
	// WaitingWriters are an RWMutex's writers waiting for the lock, soonest
	// lapsing claim first; new readers wait behind them.
	WaitingWriters []writerInfo `json:"waiting_writers,omitempty"`
	// Token is a FencedMutex's latest token granted (the counter's value).
	// The counter has no expiry and outlives the hold, so it is reported
	// also when the lock is not held.
	Token    *uint64 `json:"token,omitempty"`
	TokenKey string  `json:"token_key,omitempty"`
	// Fence is the record of a Fence with the same name, when there is one.
	Fence *fenceInfo `json:"fence,omitempty"`

	// Waiters are a FairMutex's waiters, or a Semaphore's queued requests,
	// in queue order (layout_fair.go).
	Waiters []waiterInfo `json:"waiters,omitempty"`
	// Permits is a Semaphore's size and permits taken (layout_sem.go).
	Permits *permitInfo `json:"permits,omitempty"`
	// Done tells whether a Once's function has succeeded; its Holders are
	// the caller running it (layout_once.go).
	Done *bool `json:"done,omitempty"`
	// Count is a WaitGroup's counter (layout_once.go).
	Count *int64 `json:"count,omitempty"`
	// Leader is an Election's leader's value; its Holders are the leader's
	// hold (layout_election.go).
	Leader *electionInfo `json:"leader,omitempty"`
	// Also names the other primitives stored under the same name (a Mutex,
	// a FairMutex and a Semaphore of one name are different locks with
	// different keys); --kind chooses one of them.
	Also []lockKind `json:"also,omitempty"`
}

// A holderInfo is one owner's hold.
type holderInfo struct {
	Client string `json:"client"` // the holding Client's UUID (Redisson: its UUID too)
	// ClientName is the holding Client's name, host and process (see
	// redisync.WithName), when it is a running redisync Client.
	ClientName string `json:"client_name,omitempty"`
	Owner      string `json:"owner"`           // the owner within that Client (Redisson: the thread id)
	Count      int64  `json:"count,omitempty"` // hold count: above 1 when the owner re-entered
	// TTLMillis is this hold's own remaining lease; for a Mutex, the key's.
	// For an RWMutex reader, the longest of its read holds' leases. For a
	// Semaphore holder, the time until its lease ends by the server's clock:
	// zero or negative once it has lapsed (then Lapsed is set), -1 without a
	// recorded lease (then Lapsed is set too).
	TTLMillis int64 `json:"ttl_ms"`
	// Permits is the permits a Semaphore holder has; its Owner is then the
	// term part "<n>" of its holder id "<client-uuid>:<n>".
	Permits int64 `json:"permits,omitempty"`
	// Lapsed marks a Semaphore holder whose lease has ended, or that has no
	// lease: its permits are free and not counted as taken.
	Lapsed bool `json:"lapsed,omitempty"`
	// NoLease marks a Semaphore holder without a recorded lease.
	NoLease bool `json:"no_lease,omitempty"`
	// Mode is "read" or "write" for an RWMutex holder.
	Mode string `json:"mode,omitempty"`
	// HoldTTLsMillis are an RWMutex reader's read holds' own remaining
	// leases, hold 1 first, read from their timeout keys; 0 for a hold whose
	// lease ran out (its reader crashed or stopped renewing).
	HoldTTLsMillis []int64 `json:"hold_ttls_ms,omitempty"`
}

// A lockKind names the primitive whose data a name holds: a redisync
// primitive's type name, or a Redisson layout's (RFairLock,
// RPermitExpirableSemaphore) that redisync reads.
type lockKind string

// The kinds the commands name.
const (
	kindMutex                     lockKind = "Mutex"
	kindFencedMutex               lockKind = "FencedMutex"
	kindFence                     lockKind = "Fence" // a FencedMutex's token counter, or a Fence alone
	kindRWMutex                   lockKind = "RWMutex"
	kindFairMutex                 lockKind = "FairMutex"
	kindRFairLock                 lockKind = "RFairLock"
	kindSemaphore                 lockKind = "Semaphore"
	kindCountingSemaphore         lockKind = "CountingSemaphore"
	kindExpirableSemaphore        lockKind = "ExpirableSemaphore"
	kindRPermitExpirableSemaphore lockKind = "RPermitExpirableSemaphore"
	kindOnce                      lockKind = "Once"
	kindWaitGroup                 lockKind = "WaitGroup"
	kindElection                  lockKind = "Election"
	kindMultiMutex                lockKind = "MultiMutex"
)

// A detector recognises one primitive's data in Redis.
//
// detect is given the name and the Redis type of the key NAME ("none" when
// absent). It returns nil, nil when the data is not its layout, so the next
// layout is tried; an error ends the search.
type detector struct {
	kind lockKind
	// group is the keys the layout reads: layouts of one group share them,
	// so at most one of a group is reported (the first that recognises the
	// data); layouts of different groups are different locks that may both
	// exist under one name.
	group  string
	detect func(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error)
}

// layouts are tried in order; within a group the first that recognises the
// data wins, so more specific layouts come first:
//
//   - RPermitExpirableSemaphore (layout_rfair.go): Redisson's, Java's only:
//     free permits as a string at NAME and the leased permits beside it.
//   - WaitGroup (layout_once.go): the string at NAME, an integer counter
//     (Redisson's RCountDownLatch; an RSemaphore's free permits look the
//     same).
//   - RWMutex (layout_rw.go): the hash at NAME with a field "mode".
//   - FencedMutex (layout_fenced.go): a Mutex hash plus the token counter;
//     the counter outlives the hold, so also when NAME is absent.
//   - RFairLock (layout_rfair.go): Redisson's fair lock, Java's only: the
//     hash at NAME with Redisson's queue of waiters beside it.
//   - Mutex: the hash at NAME alone.
//   - FairMutex (layout_fair.go): redisync_fair...:{NAME} (holder, queue in order).
//   - Semaphore (layout_sem.go): redisync_sem...:{NAME} (size, permits per holder).
//   - Once (layout_once.go): redisync_once...:{NAME} (the claim, the completion).
//   - Election (layout_election.go): redisync_election:{NAME} (the leader).
//   - Fence (layout_fenced.go): only a Fence record under the name; only
//     when no lock is found, since a lock's own data says more.
var detectors = []detector{
	{kind: kindRPermitExpirableSemaphore, group: "name", detect: detectRPermitSemaphore},
	{kind: kindWaitGroup, group: "name", detect: detectWaitGroup},
	{kind: kindRWMutex, group: "name", detect: detectRWMutex},
	{kind: kindFencedMutex, group: "name", detect: detectFencedMutex},
	{kind: kindRFairLock, group: "name", detect: detectRFairLock},
	{kind: kindMutex, group: "name", detect: detectMutex},
	{kind: kindFairMutex, group: "fair", detect: detectFairMutex},
	{kind: kindSemaphore, group: "sem", detect: detectSemaphore},
	{kind: kindOnce, group: "once", detect: detectOnce},
	{kind: kindElection, group: "election", detect: detectElection},
	{kind: kindFence, group: "fence", detect: detectFence},
}

// errNotFound is wrapped when nothing is stored under a name.
var errNotFound = errors.New("no lock")

// detect identifies the primitive stored under name and reads it. When
// several are (a Mutex and a FairMutex of one name are different locks),
// kind chooses one; without it the first in the order of layouts is
// reported, and the others are named in its Also.
func detect(ctx context.Context, rc rueidis.Client, name, kind string) (*lockInfo, error) {
	found, keyType, err := detectAll(ctx, rc, name)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		if keyType == "none" {
			return nil, fmt.Errorf("%w named %q: key %q does not exist, nor a FairMutex's, Semaphore's, Once's or Election's keys (a Mutex that nobody holds, a WaitGroup at zero, or an Election without a leader, has no key)", errNotFound, name, name)
		}
		return nil, foreignKeyError(ctx, rc, name, keyType)
	}
	info := found[0]
	if kind != "" {
		info = nil
		for _, f := range found {
			if strings.EqualFold(string(f.Kind), kind) {
				info = f
			}
		}
		if info == nil {
			return nil, fmt.Errorf("%w of kind %s named %q: found %s", errNotFound, kind, name, strings.Join(kinds(found), ", "))
		}
	}
	for _, f := range found {
		if f != info {
			info.Also = append(info.Also, f.Kind)
		}
	}
	if info.Fence == nil {
		info.Fence, err = readFence(ctx, rc, name)
	}
	return info, err
}

// detectAll reads every primitive stored under name, in the order of
// layouts, at most one per group, and returns them with the Redis type of
// the key name ("none" when absent). A lone Fence record is reported only
// when no lock is found.
func detectAll(ctx context.Context, rc rueidis.Client, name string) (found []*lockInfo, keyType string, err error) {
	keyType, err = rc.Do(ctx, rc.B().Type().Key(name).Build()).ToString()
	if err != nil {
		return nil, "", fmt.Errorf("read key %q: %w", name, err)
	}
	matched := map[string]bool{}
	for _, l := range detectors {
		if matched[l.group] || l.kind == kindFence && len(found) > 0 {
			continue
		}
		info, err := l.detect(ctx, rc, name, keyType)
		if err != nil {
			return nil, keyType, err
		}
		if info != nil {
			matched[l.group] = true
			nameClients(ctx, rc, info)
			found = append(found, info)
		}
	}
	return found, keyType, nil
}

// kinds lists the kinds of found.
func kinds(found []*lockInfo) []string {
	var ks []string
	for _, f := range found {
		ks = append(ks, string(f.Kind))
	}
	return ks
}

// foreignKeyError explains that the key name holds data no layout knows.
func foreignKeyError(ctx context.Context, rc rueidis.Client, name, keyType string) error {
	msg := fmt.Sprintf("key %q is a %s that is not a redisync lock", name, keyType)
	if keyType == "hash" {
		if fields, err := rc.Do(ctx, rc.B().Hkeys().Key(name).Build()).AsStrSlice(); err == nil && len(fields) > 0 {
			sort.Strings(fields)
			msg += fmt.Sprintf(" (its fields, such as %q, are not \"<client-uuid>:<owner>\" hold counts)", fields[0])
		}
	}
	return errors.New(msg)
}

// detectMutex recognises Redisson's RLock layout: a hash at NAME whose every
// field is "<client-uuid>:<owner>" (owner a decimal number) with a positive
// integer hold count, normally exactly one field. A hash with a "mode" field
// is an RWMutex and is left to that layout.
func detectMutex(ctx context.Context, rc rueidis.Client, name, keyType string) (*lockInfo, error) {
	if keyType != "hash" {
		return nil, nil
	}
	fields, err := rc.Do(ctx, rc.B().Hgetall().Key(name).Build()).AsStrMap()
	if err != nil {
		return nil, fmt.Errorf("read lock %q: %w", name, err)
	}
	if _, ok := fields[layout.RWMode]; ok {
		return nil, nil
	}
	info := &lockInfo{Name: name, Kind: kindMutex, Key: name, Locked: len(fields) > 0}
	for field, value := range fields {
		h, ok := parseHolder(field, value)
		if !ok || h.Mode != "" {
			return nil, nil
		}
		info.Holders = append(info.Holders, h)
	}
	sort.Slice(info.Holders, func(i, j int) bool {
		return info.Holders[i].Client+info.Holders[i].Owner < info.Holders[j].Client+info.Holders[j].Owner
	})
	if info.TTLMillis, err = state.PTTL(ctx, rc, name); err != nil {
		return nil, err
	}
	for i := range info.Holders {
		info.Holders[i].TTLMillis = info.TTLMillis
	}
	l := layout.MutexOf(name) // redisync's waiters queued in Redis
	if info.Waiters, err = readQueue(ctx, rc, l.Queue, l.Alive, ""); err != nil {
		return nil, err
	}
	return info, nil
}

// parseHolder parses a hold's field (layout.Field, a write hold's too) and
// its hold count.
func parseHolder(field, value string) (holderInfo, bool) {
	f, ok := layout.ParseField(field)
	if !ok {
		return holderInfo{}, false
	}
	if _, err := strconv.ParseUint(f.Hold, 10, 64); err != nil {
		return holderInfo{}, false
	}
	count, err := strconv.ParseInt(value, 10, 64)
	if err != nil || count < 1 {
		return holderInfo{}, false
	}
	h := holderInfo{Client: f.Client, Owner: f.Hold, Count: count}
	if f.Write {
		h.Mode = layout.RWWrite
	}
	return h, true
}
