package main

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/redisserver"
)

// The command reaches a TLS server through rediss:// with --tls-ca (and a
// client certificate), and refuses the flags without rediss://.
func TestTLSFlags(t *testing.T) {
	if target.Mini != nil {
		t.Skip("miniredis has no TLS; " + redisserver.InstallHint)
	}
	srv, err := redisserver.StartTLS()
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Stop()) }()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.TLSAddr}, TLSConfig: srv.TLSConfig(),
		DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	defer rc.Close()
	c, err := redisync.New(rc)
	require.NoError(t, err)
	defer c.Close()
	m := c.NewMutex("tls:cli")
	require.NoError(t, m.LockContext(context.Background()))
	defer m.Unlock()

	url := "rediss://" + srv.TLSAddr
	r := runCmd(t, "", nil, "inspect", "--redis", url, "tls:cli")
	require.NotEqual(t, 0, r.code, "without the authority the server's certificate is not trusted")
	r = runCmd(t, "", nil, "inspect", "--redis", url, "--tls-ca", srv.CAFile, "tls:cli")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `Mutex "tls:cli": locked`)
	r = runCmd(t, "", nil, "inspect", "--redis", url, "--tls-ca", srv.CAFile, "--tls-cert", srv.CertFile, "--tls-key", srv.KeyFile, "tls:cli")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCmd(t, "", nil, "inspect", "--redis", serverURL(), "--tls-ca", srv.CAFile, "tls:cli")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, "need a rediss:// URL")
}
