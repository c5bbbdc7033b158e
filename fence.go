package redisync

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/state"
)

// A Fence is a value in Redis guarded by fencing tokens: the resource side of
// a [FencedMutex]. It remembers the highest token that has written to it and
// atomically rejects a write carrying a lower token, so a holder whose lease
// ran out while it was paused cannot overwrite the work of the holder that
// came after it. A resource outside Redis needs the same check where it
// stores its data: in SQL, the condition of the package documentation's
// example, treating "0 rows updated" as a stale token.
type Fence struct {
	c    *Client
	name string
	key  string
}

// NewFence returns the fence of the resource called name. Its record is the
// hash redisync_fence:{name} (the name's hash tag rule as for locks), so a
// fence named like its lock shares the lock's cluster slot.
func (c *Client) NewFence(name string) *Fence {
	c.single("NewFence")
	if err := layout.Check(name); err != nil {
		panic("redisync: invalid fence name " + strconv.Quote(name) + ": " + err.Error())
	}
	return &Fence{c: c, name: name, key: layout.Aux(layout.FencePrefix, name)}
}

// Set stores value if token is not lower than any token that has written to
// f before; a write with the same token as the last one is accepted. It
// returns an error wrapping ErrStaleToken when the write is rejected.
func (f *Fence) Set(ctx context.Context, token uint64, value string) error {
	stored, seen, err := f.c.direct.SetFence(ctx, f.key, token, value)
	switch {
	case err != nil:
		return fmt.Errorf("redisync: fence %q: %w", f.name, err)
	case !stored:
		return fmt.Errorf("redisync: fence %q: token %d is lower than %d: %w", f.name, token, seen, ErrStaleToken)
	}
	return nil
}

// Get returns the value stored in f and the token that stored it; an empty
// value and token 0 when nothing has been stored.
func (f *Fence) Get(ctx context.Context) (value string, token uint64, err error) {
	value, token, err = state.ReadFence(ctx, f.c.rc, f.key)
	if err != nil {
		return "", 0, fmt.Errorf("redisync: fence %q: %w", f.name, err)
	}
	return value, token, nil
}
