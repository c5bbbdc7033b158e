package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/layout"
)

// A clientRecord is what a running redisync Client keeps about itself at
// layout.ClientInfo(its id): the name given to redisync.WithName (its host
// and process by default), its host and its process id.
type clientRecord struct {
	Name string `json:"name"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// String is how the tools show a Client: its name, followed by its host and
// process when the name is not already those.
func (r clientRecord) String() string {
	where := fmt.Sprintf("%s/%d", r.Host, r.PID)
	if r.Name == where || r.Host == "" {
		return r.Name
	}
	return r.Name + " (" + where + ")"
}

// retryUnknown is how long an id without a record is not asked again: a
// Client writes its record a moment after it starts, and a Java client
// (Redisson) or a Client gone has none.
const retryUnknown = 5 * time.Second

// clientNames caches the names of Clients by id. An id is random and fresh
// for each Client, so one cache serves every server the command reads.
var clientNames = struct {
	mu      sync.Mutex
	known   map[string]string    // id → shown name
	unknown map[string]time.Time // id → when it was found without a record
}{known: map[string]string{}, unknown: map[string]time.Time{}}

// namesOf returns the shown names of the Clients ids that have a record,
// reading from rc the records not yet known.
func namesOf(ctx context.Context, rc rueidis.Client, ids []string) map[string]string {
	out := make(map[string]string, len(ids))
	var ask []string
	clientNames.mu.Lock()
	for _, id := range ids {
		if n, ok := clientNames.known[id]; ok {
			out[id] = n
		} else if t, ok := clientNames.unknown[id]; id != "" && (!ok || time.Since(t) >= retryUnknown) && !contains(ask, id) {
			ask = append(ask, id)
		}
	}
	clientNames.mu.Unlock()
	if len(ask) == 0 {
		return out
	}
	cmds := make(rueidis.Commands, len(ask))
	for i, id := range ask {
		cmds[i] = rc.B().Get().Key(layout.ClientInfo(id)).Build()
	}
	results := rc.DoMulti(ctx, cmds...)
	clientNames.mu.Lock()
	defer clientNames.mu.Unlock()
	for i, id := range ask {
		var rec clientRecord
		v, err := results[i].ToString()
		switch {
		case err == nil && json.Unmarshal([]byte(v), &rec) == nil && rec.Name != "":
			clientNames.known[id], out[id] = rec.String(), rec.String()
			delete(clientNames.unknown, id)
		case err == nil || rueidis.IsRedisNil(err):
			clientNames.unknown[id] = time.Now()
		}
	}
	return out
}

// contains reports whether ids has id.
func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// nameClients sets the ClientName of info's holders, waiters and waiting
// writers whose Client has a record.
func nameClients(ctx context.Context, rc rueidis.Client, info *lockInfo) {
	var ids []string
	for _, h := range info.Holders {
		ids = append(ids, h.Client)
	}
	for _, w := range info.Waiters {
		ids = append(ids, w.Client)
	}
	for _, w := range info.WaitingWriters {
		ids = append(ids, w.Client)
	}
	if len(ids) == 0 {
		return
	}
	names := namesOf(ctx, rc, ids)
	for i := range info.Holders {
		info.Holders[i].ClientName = names[info.Holders[i].Client]
	}
	for i := range info.Waiters {
		info.Waiters[i].ClientName = names[info.Waiters[i].Client]
	}
	for i := range info.WaitingWriters {
		info.WaitingWriters[i].ClientName = names[info.WaitingWriters[i].Client]
	}
}

// shownClient is how a table shows a Client: its name when it has a record,
// else its id.
func shownClient(id, name string) string {
	if name != "" {
		return name
	}
	return id
}
