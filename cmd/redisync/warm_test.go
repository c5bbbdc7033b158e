package main

import (
	"context"
	"math/bits"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// A demo worker opens every connection of its client before it reports
// ready (see warm): a fresh rueidis client has dialed one of them (of two
// on two CPUs, four from four on), and warm leaves it with all, so no timed
// handover pays for a dial.
func TestWarmOpensEveryConnection(t *testing.T) {
	if target.Mini != nil {
		t.Skipf("miniredis lacks CLIENT LIST; %s", redisserver.InstallHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "warm-" + strings.ReplaceAll(t.Name(), "/", "-")
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: target.Addrs, DisableCache: true, ClientName: name})
	require.NoError(t, err)
	defer rc.Close()
	connections := func() int {
		list, err := rc.Do(ctx, rc.B().ClientList().Build()).ToString()
		require.NoError(t, err)
		return strings.Count(list, " name="+name+" ")
	}
	require.Equal(t, 1, connections(), "a new client has dialed one connection")
	require.NoError(t, warm(ctx, rc))
	want := 1 << min(bits.Len(uint(runtime.GOMAXPROCS(0)))-1, 2) // rueidis' default PipelineMultiplex
	assert.Equal(t, want, connections(), "warm dialed every connection rueidis spreads keyed commands over")
}
