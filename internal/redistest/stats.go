package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/rueidis"
)

// CommandCalls returns how many times the server behind rc has run command
// (lower case, as INFO commandstats names it: "evalsha", "eval"), summed over
// every node of a cluster. It fails the test when the server cannot tell,
// which miniredis cannot; callers skip on a Target that is not Real.
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

// KillSubscribers closes every connection of the server behind rc (every node
// of a cluster) that holds a Pub/Sub subscription, and returns how many it
// closed. CLIENT KILL TYPE pubsub alone misses RESP3 connections, which Redis
// counts as normal clients even while they are subscribed.
func KillSubscribers(tb testing.TB, rc rueidis.Client) int {
	tb.Helper()
	ctx := context.Background()
	killed := 0
	for _, node := range rc.Nodes() {
		n, err := node.Do(ctx, node.B().ClientKill().TypePubsub().SkipmeNo().Build()).AsInt64()
		if err != nil {
			tb.Fatalf("CLIENT KILL TYPE pubsub: %v", err)
		}
		killed += int(n)
		list, err := node.Do(ctx, node.B().ClientList().Build()).ToString()
		if err != nil {
			tb.Fatalf("CLIENT LIST: %v", err)
		}
		for _, id := range subscriberIDs(list) {
			if node.Do(ctx, node.B().ClientKill().Id(id).SkipmeNo().Build()).Error() == nil {
				killed++
			}
		}
	}
	return killed
}

// subscriberIDs returns the ids of the clients in a CLIENT LIST reply that
// have a channel, pattern or shard channel subscription.
func subscriberIDs(list string) []int64 {
	var ids []int64
	for _, line := range strings.Split(strings.TrimPrefix(list, "txt:"), "\n") {
		var id int64
		subscribed := false
		for _, field := range strings.Fields(line) {
			name, value, _ := strings.Cut(field, "=")
			switch name {
			case "id":
				id, _ = strconv.ParseInt(value, 10, 64)
			case "sub", "psub", "ssub":
				subscribed = subscribed || (value != "0" && value != "")
			}
		}
		if subscribed && id > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}
