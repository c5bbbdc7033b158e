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
	"github.com/go-redisync/redisync/internal/layout"
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
	require.NoError(t, admin.Do(ctx, admin.B().Arbitrary(args[:2]...).Args(args[2:]...).Build()).Error())
	t.Cleanup(func() { admin.Do(context.Background(), admin.B().AclDeluser().Username(args[2]).Build()) })
	return clientOn(t, userOption(args))
}

// userOption logs in to the standalone server as the user that args (an ACL
// SETUSER line) describe.
func userOption(args []string) rueidis.ClientOption {
	opt := standalone.ClientOption()
	opt.Username = args[2]
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, ">"); ok {
			opt.Password = p
		}
	}
	return opt
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

	// The Client keeps its record, by which the tools name it.
	assert.Eventually(t, func() bool {
		n, err := admin.Do(ctx, admin.B().Exists().Key(layout.ClientInfo(c.ID())).Build()).AsInt64()
		return err == nil && n == 1
	}, hang, 10*time.Millisecond, "no record of the Client")
}

// A user without the permissions gets the server's refusal, naming what is
// missing, from LockContext at once: not a hang, not a retry loop. A refusal
// inside a script names the script's line, and redisync adds that line's
// source, which names the command.
// refusal matches an ACL refusal in any server's wording.
const refusal = `(noperm|no permissions|can't run this command|acl failure)`

func TestACLMissingPermissionIsAnError(t *testing.T) {
	requireReal(t, standalone, "ACL")
	admin := newRueidis(t, standalone)
	line := aclLine(t)
	for _, tc := range []struct {
		what, drop, add string
		want            []string // patterns the error matches, whatever the case
	}{
		{"no EVALSHA", "+evalsha", "", []string{"noperm", "evalsha"}},
		// Servers word a refusal inside a script each their own way: Redis
		// 7.0 "NOPERM ... can't run this command", Redis 7.2 and Valkey 8
		// "acl failure in script: ... no permissions to run the 'pexpire'
		// command". Each names a refusal and the command.
		{"no PEXPIRE inside the script", "+pexpire", "", []string{refusal, "mutex_acquire.lua", "'pexpire'"}},
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
				assert.Regexp(t, "(?i)"+w, err.Error(), "the refusal names what is missing")
			}
			assert.Contains(t, err.Error(), name)
		})
	}
}

// A managed service may refuse CONFIG, WAIT, CLIENT and the keyspace
// channels to its users. The documented least-privilege user has none of
// them, so TestACLLeastPrivilege is every primitive on such a server; here
// the server is seen refusing each to that user, and WithSyncReplicas, which
// needs WAIT, fails at once with the refusal, naming WAIT, and leaves the
// lock free.
func TestACLManagedServiceRestrictions(t *testing.T) {
	requireReal(t, standalone, "ACL")
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	admin := newRueidis(t, standalone)
	line := aclLine(t)
	c := setUser(t, admin, line)

	opt := userOption(line)
	rc := clientRC(t, opt)
	for _, cmd := range []rueidis.Completed{
		rc.B().ConfigGet().Parameter("notify-keyspace-events").Build(),
		rc.B().Wait().Numreplicas(0).Timeout(1).Build(),
		rc.B().ClientId().Build(),
		rc.B().Role().Build(),
		rc.B().Info().Build(),
		rc.B().Psubscribe().Pattern("__keyspace@0__:*").Build(),
	} {
		what := strings.Join(cmd.Commands(), " ")
		err := rc.Do(ctx, cmd).Error()
		require.Error(t, err, "%s: the documented user may not run it", what)
		assert.Regexp(t, "(?i)noperm", err.Error(), what)
	}

	sync, err := redisync.New(clientRC(t, opt), redisync.WithSyncReplicas(1, 300*time.Millisecond))
	require.NoError(t, err)
	defer func() { _ = sync.Close() }()
	name := "orders:acl:sync" + uniqueSuffix()
	start := time.Now()
	err = sync.NewMutex(name).LockContext(ctx)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second, "a refusal is an error at once, not a wait")
	assert.NotErrorIs(t, err, redisync.ErrNotReplicated, "WAIT was refused, not answered")
	assert.Regexp(t, "(?i)noperm.*wait|wait.*noperm", err.Error(), "the refusal names WAIT")
	m := c.NewMutex(name)
	assert.Eventually(t, func() bool {
		locked, err := m.IsLocked(ctx)
		return err == nil && !locked
	}, hang, 20*time.Millisecond, "the refused call left the lock held")
}
