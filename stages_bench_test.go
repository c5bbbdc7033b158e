package redisync_test

import (
	"bufio"
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/scripts"
)

// BenchmarkHandoverStages splits a handover between two Clients (the holder's
// Unlock; the waiter queued in Redis for 2 ms) into stages, timed on one
// clock: time.Now on the Go side and the server's MONITOR feed, which stamps
// a script call when it starts and each of its commands when it runs.
//
//   - call: Unlock called → the release script starts (the releaser's code,
//     rueidis's writer goroutine, the loopback, the server's read and parse);
//   - script: the script starts → its PUBLISH of the waiter's place;
//   - delivery: that PUBLISH → the message reaches the waiter's Client (the
//     server's write, the loopback, rueidis's reader goroutine);
//   - return: the message → the waiter's LockContext returns (the registry,
//     the waiting goroutine's wake-up, the handed hold taken).
//
// It reports the median of each (call-p50-µs and so on) and of the whole
// (handover-p50-µs). MONITOR costs the server some work per command (it
// formats each for the feed), which lands in the script and delivery
// stages; so the handovers are then run again with MONITOR off, and the
// release script's execution time as SLOWLOG measures it is reported too
// (script-alone-p50-µs). A handover in which the waiter was not yet queued (the release
// finds nobody and publishes only "0") is not counted.
//
// Run with: go test -run '^$' -bench HandoverStages -benchtime 2000x
func BenchmarkHandoverStages(b *testing.B) {
	if !standalone.Real() {
		b.Skip("MONITOR needs a real redis-server")
	}
	ctx := context.Background()
	feed := monitor(b, standalone.Addrs[0])
	var message atomic.Int64 // when the latest place number arrived, unix ns
	holder, admin := newClient(b, standalone)
	waiter, _ := newClient(b, standalone, redisync.WithOnMessageForTest(func(_, msg string) {
		if msg != "0" {
			message.Store(time.Now().UnixNano())
		}
	}))
	h, w := holder.NewMutex(b.Name()), waiter.NewMutex(b.Name())
	type handover struct{ unlock, message, returned int64 }
	var runs []handover
	once := func() handover {
		returned := make(chan int64)
		h.Lock()
		go func() {
			if err := w.LockContext(ctx); err != nil {
				b.Error(err)
			}
			returned <- time.Now().UnixNano()
			w.Unlock()
		}()
		time.Sleep(2 * time.Millisecond) // let the waiter queue
		message.Store(0)
		unlock := time.Now().UnixNano()
		h.Unlock()
		done := <-returned
		return handover{unlock, message.Load(), done}
	}
	for b.Loop() {
		runs = append(runs, once())
	}
	b.StopTimer()
	lines := feed()
	// The release script's own time, MONITOR off: SLOWLOG logs every
	// command's execution time when its threshold is 0.
	scriptAlone := slowlogged(b, admin, len(runs), func() { once() })
	var call, script, delivery, ret, whole []time.Duration
	for _, r := range runs {
		start, publish, ok := releaseStages(lines, r.unlock, r.returned)
		if !ok || r.message == 0 {
			continue
		}
		call = append(call, time.Duration(start-r.unlock))
		script = append(script, time.Duration(publish-start))
		delivery = append(delivery, time.Duration(r.message-publish))
		ret = append(ret, time.Duration(r.returned-r.message))
		whole = append(whole, time.Duration(r.returned-r.unlock))
	}
	if len(whole) == 0 {
		b.Fatal("no handover through a queued waiter's place was seen")
	}
	for _, s := range []struct {
		unit string
		d    []time.Duration
	}{{"call", call}, {"script", script}, {"delivery", delivery}, {"return", ret}, {"handover", whole}, {"script-alone", scriptAlone}} {
		slices.Sort(s.d)
		b.ReportMetric(float64(s.d[len(s.d)/2].Nanoseconds())/1e3, s.unit+"-p50-µs")
	}
	b.ReportMetric(float64(len(whole))/float64(len(runs)), "counted/op")
}

// slowlogged runs f n times with SLOWLOG logging every command and returns
// the execution times of mutex_release it logged.
func slowlogged(b *testing.B, rc rueidis.Client, n int, f func()) []time.Duration {
	ctx := context.Background()
	set := func(k, v string) {
		if err := rc.Do(ctx, rc.B().ConfigSet().ParameterValue().ParameterValue(k, v).Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range []string{"slowlog-max-len", "slowlog-log-slower-than"} {
		kv, err := rc.Do(ctx, rc.B().ConfigGet().Parameter(k).Build()).AsStrMap()
		if err != nil {
			b.Fatal(err)
		}
		defer set(k, kv[k])
	}
	set("slowlog-max-len", "1000000")
	set("slowlog-log-slower-than", "0")
	var took []time.Duration
	for range n {
		if err := rc.Do(ctx, rc.B().SlowlogReset().Build()).Error(); err != nil {
			b.Fatal(err)
		}
		f()
		entries, err := rc.Do(ctx, rc.B().SlowlogGet().Count(-1).Build()).ToArray()
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			fields, _ := e.ToArray()
			if len(fields) < 4 {
				continue
			}
			args, _ := fields[3].AsStrSlice()
			if len(args) > 1 && strings.EqualFold(args[0], "evalsha") && args[1] == scripts.MutexRelease.SHA1 {
				us, _ := fields[2].AsInt64()
				took = append(took, time.Duration(us)*time.Microsecond)
				break // the holder's release, not the waiter's (logged after it, listed first)
			}
		}
	}
	return took
}

// A fed is one line of a MONITOR feed: its time (unix ns), its client
// ("lua" for a script's commands) and its command's arguments.
type fed struct {
	at     int64
	client string
	args   []string
}

// releaseStages finds, among lines, the first start of mutex_release at or
// after from and the first PUBLISH of a place number (not "0") that the
// script made after it, both before to.
func releaseStages(lines []fed, from, to int64) (start, publish int64, ok bool) {
	for _, l := range lines {
		switch {
		case l.at < from || l.at > to:
		case start == 0 && l.client != "lua" && len(l.args) > 1 && strings.EqualFold(l.args[0], "evalsha") &&
			l.args[1] == scripts.MutexRelease.SHA1:
			start = l.at
		case start != 0 && l.client == "lua" && len(l.args) == 3 && strings.EqualFold(l.args[0], "publish") && l.args[2] != "0":
			return start, l.at, true
		}
	}
	return 0, 0, false
}

// monitor starts a MONITOR feed of the server at addr and returns the
// function that stops it and returns the lines read.
func monitor(tb testing.TB, addr string) func() []fed {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		tb.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		tb.Fatalf("MONITOR: %q, %v", line, err)
	}
	var mu sync.Mutex
	var lines []fed
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if l, ok := parseFed(line); ok {
				mu.Lock()
				lines = append(lines, l)
				mu.Unlock()
			}
		}
	}()
	return func() []fed {
		time.Sleep(100 * time.Millisecond) // the feed's last lines
		_ = conn.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return lines
	}
}

// parseFed reads a MONITOR line: +1796358489.294978 [0 127.0.0.1:34286] "evalsha" "…" …
func parseFed(line string) (fed, bool) {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "+"), "\r\n")
	stamp, rest, ok := strings.Cut(line, " [")
	if !ok {
		return fed{}, false
	}
	secs, micros, ok := strings.Cut(stamp, ".")
	s, err1 := strconv.ParseInt(secs, 10, 64)
	us, err2 := strconv.ParseInt(micros, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return fed{}, false
	}
	who, cmd, ok := strings.Cut(rest, "] ")
	if !ok {
		return fed{}, false
	}
	_, client, _ := strings.Cut(who, " ")
	var args []string
	for _, a := range strings.Split(cmd, "\" \"") {
		args = append(args, strings.Trim(a, "\""))
	}
	return fed{at: s*1e9 + us*1e3, client: client, args: args}, true
}
