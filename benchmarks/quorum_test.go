package benchmarks_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redisync/redisync/benchmarks"
	"github.com/go-redisync/redisync/internal/redistest"
)

// The quorum comparison runs its three scenarios for both libraries on
// three servers, without errors, and reports every figure.
func TestQuorumQuick(t *testing.T) {
	if addr == "" {
		t.Skip("needs real redis-servers")
	}
	var addrs []string
	for _, s := range redistest.Servers(t, 3) {
		addrs = append(addrs, s.Addr)
	}
	peers := benchmarks.QuorumPeers(benchmarks.DefaultPoll)
	r := benchmarks.RunQuorum(context.Background(), addrs, peers, 300*time.Millisecond)
	for k, err := range r.Errors {
		t.Errorf("%s: %v", k, err)
	}
	for _, p := range peers {
		for scenario, m := range map[string]map[string]benchmarks.Summary{"serial": r.Serial, "parallel": r.Parallel, "contended": r.Contended} {
			if s, ok := m[p.Name]; !ok || s.N == 0 || s.Stalled > 0 {
				t.Errorf("%s, %s: %+v", p.Name, scenario, s)
			}
		}
	}
	t.Log("\n" + r.Markdown())
}
