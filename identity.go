package redisync

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// The record of a Client in Redis (layout.ClientInfo) lives identityTTL and
// is written again every identityEvery while the Client runs: a Client that
// dies is gone from it within a minute, and one write in three may fail
// without the record going missing.
const (
	identityTTL   = time.Minute
	identityEvery = identityTTL / 3
	identityBound = 2 * time.Second // one write, or the delete at Close
)

// defaultName is a Client's name without WithName: the host and the process.
func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// An identity keeps a Client's record (its name, host and process id) in
// each of its deployments while it runs, so that the tools can name the
// holder of a hold field "<id>:<n>". A timer writes it; no goroutine waits
// in between.
type identity struct {
	rcs    []rueidis.Client
	key    string
	record string
	logger *slog.Logger

	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	warned  bool
	writing sync.WaitGroup
}

// startIdentity writes the record of the Client id, called name, at once and
// then every identityEvery until stop.
func startIdentity(rcs []rueidis.Client, id, name string, logger *slog.Logger) *identity {
	host, _ := os.Hostname()
	record, _ := json.Marshal(struct {
		Name string `json:"name"`
		Host string `json:"host"`
		PID  int    `json:"pid"`
	}{Name: name, Host: host, PID: os.Getpid()})
	i := &identity{rcs: rcs, key: layout.ClientInfo(id), record: string(record), logger: logger}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.timer = time.AfterFunc(0, i.write)
	return i
}

// write writes the record to every deployment and sets the next write.
func (i *identity) write() {
	i.mu.Lock()
	if i.stopped {
		i.mu.Unlock()
		return
	}
	i.writing.Add(1)
	i.mu.Unlock()
	defer i.writing.Done()
	ctx, cancel := context.WithTimeout(context.Background(), identityBound)
	defer cancel()
	for _, rc := range i.rcs {
		err := rc.Do(ctx, rc.B().Set().Key(i.key).Value(i.record).PxMilliseconds(identityTTL.Milliseconds()).Build()).Error()
		if err != nil && !i.warned {
			// Once: an ACL without the key (see docs/topologies.md) refuses
			// every write alike.
			i.warned = true
			i.logger.Warn("redisync: could not record the Client's name in Redis; the tools show its id only",
				"key", i.key, "error", err)
		}
	}
	i.mu.Lock()
	if !i.stopped {
		i.timer.Reset(identityEvery)
	}
	i.mu.Unlock()
}

// stop ends the writes and deletes the record, within identityBound.
func (i *identity) stop() {
	i.mu.Lock()
	i.stopped = true
	i.timer.Stop()
	i.mu.Unlock()
	i.writing.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), identityBound)
	defer cancel()
	for _, rc := range i.rcs {
		rc.Do(ctx, rc.B().Del().Key(i.key).Build())
	}
}
