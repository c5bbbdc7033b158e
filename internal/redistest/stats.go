package redistest

import (
	"context"
	"github.com/go-redisync/redisync/internal/redisserver"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// CommandCalls returns how many times the server behind rc has run command
// (lower case, as INFO commandstats names it: "evalsha", "eval"), summed over
// every node of a cluster. It fails the test when the server cannot tell,
// which miniredis cannot; callers skip on a redisserver.Target that is not Real.
func CommandCalls(tb testing.TB, rc rueidis.Client, command string) int64 {
	tb.Helper()
	var total int64
	for _, node := range rc.Nodes() {
		info, err := node.Do(context.Background(), node.B().Info().Section("commandstats").Build()).ToString()
		if err != nil {
			tb.Fatalf("INFO commandstats: %v", err)
		}
		total += parseCalls(info, command)
	}
	return total
}

// parseCalls reads calls=N from the line cmdstat_<command>:calls=N,... of an
// INFO commandstats reply.
func parseCalls(info, command string) int64 {
	prefix := "cmdstat_" + command + ":calls="
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimPrefix(strings.TrimSpace(line), "txt:"), prefix)
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
		return n
	}
	return 0
}

// KillSubscribers closes every connection of tg's servers (every node of a
// cluster) that holds a Pub/Sub subscription, as CLIENT KILL TYPE pubsub
// does, and returns how many it closed. It sends the command on a connection
// of its own: a subscribed RESP3 connection also carries ordinary commands,
// and CLIENT KILL spares the connection that sends it.
func KillSubscribers(tb testing.TB, tg *redisserver.Target) int {
	tb.Helper()
	rc, err := tg.NewClient()
	if err != nil {
		tb.Fatalf("KillSubscribers: %v", err)
	}
	defer rc.Close()
	killed := 0
	for _, node := range rc.Nodes() {
		n, err := node.Do(context.Background(), node.B().ClientKill().TypePubsub().Build()).AsInt64()
		if err != nil {
			tb.Fatalf("CLIENT KILL TYPE pubsub: %v", err)
		}
		killed += int(n)
	}
	return killed
}
