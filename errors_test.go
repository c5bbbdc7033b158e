package redisync_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// An error about one primitive names its sort and its name once, and the
// package once: what a user reads in a log line is the primitive, not "lock"
// for a semaphore, and no "redisync: ... redisync:".
func TestErrorsNameThePrimitiveOnce(t *testing.T) {
	c, _ := newClient(t, standalone)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := freshName(t)

	m := c.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))
	forced, err := c.NewMutex(name).ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, forced)
	select {
	case <-m.Done():
	case <-ctx.Done():
		t.Fatal("the force-unlocked holder was not told")
	}
	err = m.Err()
	require.ErrorIs(t, err, redisync.ErrLockLost)
	require.ErrorIs(t, err, redisync.ErrForceUnlocked)
	assert.Equal(t, fmt.Sprintf("redisync: Mutex %q: lock lost: force-unlocked", name), err.Error())
	assert.ErrorIs(t, m.UnlockContext(ctx), redisync.ErrLockLost)

	rw := c.NewRWMutex(name + ":rw")
	err = rw.RUnlockContext(ctx)
	require.ErrorIs(t, err, redisync.ErrNotHeld)
	assert.Equal(t, fmt.Sprintf("redisync: RWMutex %q: lock not held", name+":rw"), err.Error())

	s := c.NewSemaphore(name+":s", 2)
	other, _ := newClient(t, standalone)
	require.NoError(t, other.Close())
	err = other.NewSemaphore(name+":s", 2).Acquire(ctx, 1)
	require.ErrorIs(t, err, redisync.ErrClosed)
	assert.Equal(t, fmt.Sprintf("redisync: Semaphore %q: client closed", name+":s"), err.Error())
	require.NoError(t, s.Acquire(ctx, 1))
	s.Release(1)
}

// A name that is empty or only white space is refused, as an empty one
// always was: nobody means a lock called " ".
func TestBlankNamesAreRefused(t *testing.T) {
	c, _ := newClient(t, standalone)
	for _, name := range []string{"", " ", "\t\n"} {
		want := fmt.Sprintf("redisync: invalid lock name %q: empty or blank name", name)
		assert.PanicsWithValue(t, want, func() { c.NewMutex(name) }, "NewMutex(%q)", name)
		assert.PanicsWithValue(t, want, func() { c.NewSemaphore(name, 1) }, "NewSemaphore(%q)", name)
	}
	assert.NotPanics(t, func() { c.NewMutex(" order 7 ") }, "a name with spaces around other characters")
}
