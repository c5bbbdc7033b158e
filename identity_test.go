package redisync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
)

// A Client keeps a record of its name, host and process under its id while
// it runs, with a short expiry, and deletes it at Close; its hold fields
// start with the id, so the tools can name a holder. Its log lines and
// events carry the name.
func TestClientName(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	rc := newRueidis(t, standalone)
	var logs safeBuffer
	rec := &recorder{}
	c, err := redisync.New(rc, redisync.WithName("orders-svc"), redisync.WithObserver(rec),
		redisync.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	assert.Equal(t, "orders-svc", c.Name())
	assert.NotEmpty(t, c.ID())

	key := layout.ClientInfo(c.ID())
	var record struct {
		Name, Host string
		PID        int
	}
	require.Eventually(t, func() bool {
		v, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).ToString()
		return err == nil && json.Unmarshal([]byte(v), &record) == nil
	}, hang, 5*time.Millisecond, "no record at %s", key)
	host, _ := os.Hostname()
	assert.Equal(t, "orders-svc", record.Name)
	assert.Equal(t, host, record.Host)
	assert.Equal(t, os.Getpid(), record.PID)
	ttl, err := rc.Do(ctx, rc.B().Pttl().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	assert.True(t, ttl > 0 && ttl <= time.Minute.Milliseconds(), "the record expires within a minute: %d ms", ttl)

	name := "clientname" + uniqueSuffix()
	m := c.NewMutex(name)
	require.NoError(t, m.LockContext(ctx))
	fields, err := rc.Do(ctx, rc.B().Hkeys().Key(name).Build()).AsStrSlice()
	require.NoError(t, err)
	require.Len(t, fields, 1)
	assert.Equal(t, c.ID(), layout.ClientOf(fields[0]), "the hold field names the Client")
	acquired := rec.waitFor(t, name, redisync.EventAcquired)
	assert.Equal(t, "orders-svc", acquired.Client)
	require.NoError(t, m.UnlockContext(ctx))

	// A log line: the lock of a handle with a logger of its own is lost.
	var handleLogs safeBuffer
	lost := c.NewMutex(name+":lost", redisync.WithLogger(slog.New(slog.NewTextHandler(&handleLogs, nil))))
	require.NoError(t, lost.LockContext(ctx))
	require.NoError(t, rc.Do(ctx, rc.B().Del().Key(name+":lost").Build()).Error())
	lost.Unlock() // logs the loss
	assert.Contains(t, handleLogs.String(), "client=orders-svc")

	require.NoError(t, c.Close())
	n, err := rc.Do(ctx, rc.B().Exists().Key(key).Build()).AsInt64()
	require.NoError(t, err)
	assert.Zero(t, n, "Close deletes the record")
	assert.NotContains(t, logs.String(), "could not record")
}

// Without WithName a Client is named by its host and process; a blank name,
// and a name given to one handle, are refused.
func TestClientNameDefaultAndMisuse(t *testing.T) {
	c, _ := newClient(t, standalone)
	host, _ := os.Hostname()
	assert.Equal(t, fmt.Sprintf("%s/%d", host, os.Getpid()), c.Name())
	for _, bad := range []string{"", " \t", strings.Repeat("x", 101)} {
		_, err := redisync.New(newRueidis(t, standalone), redisync.WithName(bad))
		assert.ErrorContains(t, err, "WithName", "%q", bad)
	}
	assert.PanicsWithValue(t, "redisync: WithName applies to a Client (New), not to one handle", func() {
		c.NewMutex("clientname:handle", redisync.WithName("other"))
	})
}
