package redisync_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// aclLine returns the ACL SETUSER line that docs/topologies.md gives as the
// least privilege, split into arguments.
func aclLine(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile("docs/topologies.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```acl\n(ACL SETUSER [^\n]+)\n```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/topologies.md has no ```acl block")
	return strings.Fields(string(m[1]))
}

// setUser creates the user that args (after "ACL SETUSER") describe, deleted
// when the test ends, and returns a redisync Client logged in as it.
func setUser(t *testing.T, admin rueidis.Client, args []string) *redisync.Client {
	t.Helper()
	ctx := context.Background()
	require.Equal(t, []string{"ACL", "SETUSER"}, args[:2])
	user, password := args[2], ""
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, ">"); ok {
			password = p
		}
	}
	require.NoError(t, admin.Do(ctx, admin.B().Arbitrary(args[:2]...).Args(args[2:]...).Build()).Error())
	t.Cleanup(func() { admin.Do(context.Background(), admin.B().AclDeluser().Username(user).Build()) })
	opt := standalone.ClientOption()
	opt.Username, opt.Password = user, password
	return clientOn(t, opt)
}

// Every primitive works as the user that the documented ACL line makes, and
// nothing more is needed: waits are woken, administration answers, fences
// are written.
func TestACLLeastPrivilege(t *testing.T) {
	requireReal(t, standalone, "ACL")
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	admin := newRueidis(t, standalone)
	line := aclLine(t)
	c := setUser(t, admin, line)
	other := setUser(t, admin, line) // a second process of the same service
	// Names of this run's own, under the user's key pattern orders:*.
	prefix := "orders:acl" + uniqueSuffix() + ":"

	m, waiter := c.NewMutex(prefix+"m"), other.NewMutex(prefix+"m")
	require.NoError(t, m.LockContext(ctx))
	in := inBackground(waiter.LockContext)
	time.Sleep(100 * time.Millisecond)
	n, err := m.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	locked, err := m.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	_, err = m.TTL(ctx)
	require.NoError(t, err)
	require.NoError(t, m.UnlockContext(ctx))
	require.NoError(t, <-in, "the waiter was woken")
	require.NoError(t, waiter.UnlockContext(ctx))

	fm := c.NewFencedMutex(prefix + "f")
	token, err := fm.LockToken(ctx)
	require.NoError(t, err)
	fence := c.NewFence(prefix + "f")
	require.NoError(t, fence.Set(ctx, token, "v"))
	_, _, err = fence.Get(ctx)
	require.NoError(t, err)
	require.NoError(t, fm.UnlockContext(ctx))

	rw := c.NewRWMutex(prefix + "rw")
	require.NoError(t, rw.RLockContext(ctx))
	w := other.NewRWMutex(prefix + "rw")
	in = inBackground(w.LockContext) // claims its turn
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, rw.RUnlockContext(ctx))
	require.NoError(t, <-in)
	require.NoError(t, w.UnlockContext(ctx))

	fair, fairWaiter := c.NewFairMutex(prefix+"fair"), other.NewFairMutex(prefix+"fair")
	require.NoError(t, fair.LockContext(ctx))
	in = inBackground(fairWaiter.LockContext)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, fair.UnlockContext(ctx))
	require.NoError(t, <-in)
	ok, err := fair.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	_ = fairWaiter.UnlockContext(ctx) // force-unlocked: reports the loss

	s, sw := c.NewSemaphore(prefix+"s", 1), other.NewSemaphore(prefix+"s", 1)
	require.NoError(t, s.Acquire(ctx, 1))
	in = inBackground(func(ctx context.Context) error { return sw.Acquire(ctx, 1) })
	time.Sleep(100 * time.Millisecond)
	locked, err = s.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	s.Release(1)
	require.NoError(t, <-in)
	sw.Release(1)
}

// A user without the permissions gets the server's refusal, naming what is
// missing, from LockContext at once: not a hang, not a retry loop. A refusal
// inside a script names the script's line, and redisync adds that line's
// source, which names the command.
func TestACLMissingPermissionIsAnError(t *testing.T) {
	requireReal(t, standalone, "ACL")
	admin := newRueidis(t, standalone)
	line := aclLine(t)
	for _, tc := range []struct {
		what, drop, add string
		want            []string // in the error, whatever the case
	}{
		{"no EVALSHA", "+evalsha", "", []string{"noperm", "evalsha"}},
		{"no PEXPIRE inside the script", "+pexpire", "", []string{"can't run this command", "mutex_acquire.lua", "'pexpire'"}},
		{"other keys", "~orders:*", "~payments:*", []string{"noperm", "key"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			var args []string
			for _, a := range line {
				switch a {
				case "orders-svc":
					a = "orders-svc-" + strings.ReplaceAll(tc.what, " ", "-")
				case tc.drop:
					a = tc.add
				}
				if a != "" {
					args = append(args, a)
				}
			}
			c := setUser(t, admin, args)
			ctx, cancel := context.WithTimeout(context.Background(), hang)
			defer cancel()
			// A name of its own: a refused PEXPIRE leaves the lock written
			// without expiry (a script's writes are not undone), and a second
			// run on the same server would find it held and queue for it.
			name := "orders:acl:denied" + uniqueSuffix()
			err := c.NewMutex(name).LockContext(ctx)
			require.Error(t, err)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			for _, w := range tc.want {
				assert.Contains(t, strings.ToLower(err.Error()), w, "the refusal names what is missing")
			}
			assert.Contains(t, err.Error(), name)
		})
	}
}
