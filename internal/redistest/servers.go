package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// Servers starts n redis-servers without persistence (a restart loses
// everything) for the test tb, stopped when it ends, or skips tb on a
// machine without redis-server (fails it when one is required).
func Servers(tb testing.TB, n int) []*redisserver.Server {
	tb.Helper()
	if _, err := redisserver.ServerBinary(); err != nil && !redisserver.RequireServer() {
		tb.Skipf("needs several real servers: %v; %s", err, redisserver.InstallHint)
	}
	servers := make([]*redisserver.Server, n)
	for i := range servers {
		s, err := redisserver.StartServer()
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Stop() })
		servers[i] = s
	}
	return servers
}

// Option returns the options of a client of the one server at addr, with
// one connection for commands (rueidis spreads keyed commands over two or
// more by default, at random), so that Reconnect reaches it: a test that
// restarts a server knows which call fails.
func Option(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true, PipelineMultiplex: -1}
}

// Reconnect has each client whose server restarted connect again, as its
// next call would (that call fails: the server dropped the connection). The
// clients must have one connection for commands (see Option).
func Reconnect(rcs ...rueidis.Client) {
	for _, rc := range rcs {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if rc.Do(context.Background(), rc.B().Ping().Build()).Error() == nil {
				break
			}
		}
	}
}
