package quorum

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
)

// A server that restarted empty lost its token counters, and counts in no
// read of a counter until a token is written to it. That is safe, but a
// second server restarting empty would then leave a lock whose latest token
// was on those two unable to issue any: fewer than a majority could tell its
// counter. So as soon as a Client meets such a server (an acquire's vote
// says it is stale), it catches it up: it reads every counter from the
// servers that keep theirs, a majority of the quorum, and raises the
// restarted server's to the highest; the last batch marks it caught up
// (quorum_catchup.lua). Every token issued was written to a majority, which
// shares a server with any majority of the others, so the restarted server
// then knows every counter again, and the next one to restart empty leaves
// each latest token on a majority that knows it: tokens keep rising, and the
// lock stays available, while the servers lose their data one at a time.

// catchUpBudget bounds one catch-up: a scan of every counter on the servers
// that keep theirs, and the writes.
const catchUpBudget = 30 * time.Second

// catchUpBatch is how many counters one catch-up call writes.
const catchUpBatch = 500

// ErrFewKeep reports that fewer than a majority of the quorum keep their
// counters: a restarted server cannot be caught up (two servers lost their
// data at once, or too many are down).
var ErrFewKeep = errors.New("redisync: fewer than a majority of the quorum's servers keep their token counters")

// catchUpSoon starts the catch-up of server i in the background, unless one
// is under way. A failed one is tried again when a vote says the server is
// still stale.
func (q *Quorum) catchUpSoon(i int) {
	if !q.catching[i].CompareAndSwap(false, true) {
		return
	}
	q.work.Go(func() {
		defer q.catching[i].Store(false)
		ctx, cancel := context.WithTimeout(q.stop, catchUpBudget)
		defer cancel()
		if err := q.CatchUp(ctx, i); err != nil && q.stop.Err() == nil {
			q.cfg.Logger.Warn("redisync: could not bring the token counters of a restarted quorum server up to date; retrying at its next vote",
				"server", q.servers[i].Name, "error", err)
		}
	})
}

// CatchUp brings the token counters of server i, which restarted empty, up
// to what a majority of the quorum keeps, and marks it caught up. It does
// nothing to a server that keeps its counters.
func (q *Quorum) CatchUp(ctx context.Context, i int) error {
	target := q.servers[i]
	from, keeps, err := q.marker(ctx, target)
	switch {
	case err != nil:
		return err
	case keeps:
		return nil
	case from == "":
		return errors.New("redisync: the server has no marker yet")
	}
	sources := map[int]string{} // server -> its marker's "from"
	for j, s := range q.servers {
		if j == i {
			continue
		}
		if from, keeps, err := q.marker(ctx, s); err == nil && keeps {
			sources[j] = from
		}
	}
	if len(sources) < q.Majority() {
		return fmt.Errorf("%w: %d of %d", ErrFewKeep, len(sources), len(q.servers))
	}
	highest := map[string]uint64{}
	for j := range sources {
		if err := q.counters(ctx, j, highest); err != nil {
			return err
		}
	}
	for j, from := range sources { // none of them restarted meanwhile
		if now, keeps, err := q.marker(ctx, q.servers[j]); err != nil || !keeps || now != from {
			return fmt.Errorf("redisync: server %s changed while its counters were read", q.servers[j].Name)
		}
	}
	return q.write(ctx, target, from, highest)
}

// marker returns server s's marker's "from" ("" when it has none) and
// whether s keeps its counters.
func (q *Quorum) marker(ctx context.Context, s Server) (from string, keeps bool, err error) {
	m, err := s.RC.Do(ctx, s.RC.B().Hmget().Key(layout.QuorumMarker).Field("from", "restarted", "caught").Build()).ToArray()
	if err != nil {
		return "", false, err
	}
	f := make([]string, len(m))
	for k, v := range m {
		f[k], _ = v.ToString() // nil: ""
	}
	return f[0], f[0] != "" && (f[1] == "0" || f[2] == "1"), nil
}

// counters adds the token counters of server j to highest, keeping the
// highest value of each.
func (q *Quorum) counters(ctx context.Context, j int, highest map[string]uint64) error {
	rc := q.servers[j].RC
	var cursor uint64
	for {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match(layout.TokenPrefix+":*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return err
		}
		if len(e.Elements) > 0 {
			values, err := rc.Do(ctx, rc.B().Mget().Key(e.Elements...).Build()).ToArray()
			if err != nil {
				return err
			}
			for k, v := range values {
				s, err := v.ToString()
				if err != nil {
					continue // gone since the scan
				}
				if n, err := strconv.ParseUint(s, 10, 64); err == nil && n > highest[e.Elements[k]] {
					highest[e.Elements[k]] = n
				}
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// write raises the counters of target, whose marker's "from" is from, to
// highest, in batches, and marks it caught up with the last.
func (q *Quorum) write(ctx context.Context, target Server, from string, highest map[string]uint64) error {
	keys := make([]string, 0, catchUpBatch)
	values := make([]string, 0, catchUpBatch)
	left := len(highest)
	flush := func(last bool) error {
		ok, err := target.Runner.CatchUpQuorum(ctx, from, keys, values, last)
		if err == nil && !ok {
			err = errors.New("redisync: the server restarted again, or was caught up, during its catch-up")
		}
		keys, values = keys[:0], values[:0]
		return err
	}
	for key, n := range highest {
		keys, values = append(keys, key), append(values, strconv.FormatUint(n, 10))
		if left--; len(keys) == catchUpBatch && left > 0 {
			if err := flush(false); err != nil {
				return err
			}
		}
	}
	return flush(true)
}
