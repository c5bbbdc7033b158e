package redisync_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// Every primitive works through TLS, configured either with a rueidis
// TLSConfig or with a rediss:// URL, and a release wakes a waiter in another
// Client through it.
func TestTLS(t *testing.T) {
	requireReal(t, standalone, "TLS")
	srv, err := redisserver.StartTLS()
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()

	withConfig := rueidis.ClientOption{InitAddress: []string{srv.TLSAddr}, TLSConfig: srv.TLSConfig(),
		DisableCache: true, ForceSingleClient: true, AlwaysPipelining: true}
	withURL, err := rueidis.ParseURL("rediss://" + srv.TLSAddr)
	require.NoError(t, err)
	withURL.TLSConfig.RootCAs = srv.Roots
	withURL.DisableCache, withURL.ForceSingleClient = true, true

	untrusted := withConfig
	untrusted.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12} // the system's roots
	_, err = rueidis.NewClient(untrusted)
	require.Error(t, err, "a client that does not trust the authority is refused: the port really is TLS")

	for name, opt := range map[string]rueidis.ClientOption{"TLSConfig": withConfig, "rediss URL": withURL} {
		t.Run(name, func(t *testing.T) {
			c := clientOn(t, opt)
			for _, l := range lockers(c, "tls:"+name) {
				ctx, cancel := context.WithTimeout(context.Background(), hang)
				require.NoError(t, l.lock(ctx), l.kind)
				l.unlock()
				cancel()
			}
			m, waiter := c.NewMutex("tls:wake"), clientOn(t, opt).NewMutex("tls:wake")
			m.Lock()
			in := inBackground(waiter.LockContext)
			time.Sleep(100 * time.Millisecond)
			released := time.Now()
			m.Unlock()
			require.NoError(t, <-in)
			assert.Less(t, time.Since(released), time.Second, "woken by the release, not by a timer")
			waiter.Unlock()
		})
	}
}
