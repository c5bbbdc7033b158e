package benchmarks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/scripts"
)

// Machine describes where a run took place.
type Machine struct {
	CPU   string // model name from /proc/cpuinfo
	Cores int    // logical CPUs the process may use
	Go    string // runtime.Version
	Redis string // the server's redis_version
	OS    string // GOOS/GOARCH
	Date  time.Time
}

// describeMachine reads the CPU model and the server's version.
func describeMachine(ctx context.Context, admin rueidis.Client) Machine {
	m := Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC()}
	if info, err := admin.Do(ctx, admin.B().Info().Section("server").Build()).ToString(); err == nil {
		m.Redis = infoField(info, "redis_version")
	}
	return m
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or "unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// infoField returns one field of an INFO reply, "" if absent. Over RESP3
// the reply is a verbatim string that rueidis returns with a "txt:" prefix.
func infoField(info, key string) string {
	info = strings.TrimPrefix(info, "txt:")
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}

// infoInt returns an integer field of an INFO reply.
func infoInt(info, key string) (int, error) {
	v := infoField(info, key)
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("INFO %s: %q: %w", key, v, err)
	}
	return n, nil
}

// serverCounters returns the script calls the server has run (EVALSHA and
// EVAL, from INFO commandstats) and the CPU seconds it has used.
func serverCounters(ctx context.Context, admin rueidis.Client) (calls int64, cpu float64, err error) {
	calls, _, cpu, err = serverStats(ctx, admin)
	return calls, cpu, err
}

// uncounted are the commands that serverStats leaves out of its count: the
// count's own INFO, and the clients' keep-alive and handshakes.
var uncounted = []string{"cmdstat_info", "cmdstat_ping", "cmdstat_hello", "cmdstat_client|setinfo", "cmdstat_client|setname", "cmdstat_client|tracking"}

// serverStats returns the script calls the server has run (EVALSHA and
// EVAL), every command it has run (a script's inner commands included, the
// uncounted aside), from INFO commandstats, and the CPU seconds it has used.
func serverStats(ctx context.Context, admin rueidis.Client) (calls, commands int64, cpu float64, err error) {
	info, err := admin.Do(ctx, admin.B().Info().Section("all").Build()).ToString()
	if err != nil {
		return 0, 0, 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || slices.Contains(uncounted, name) {
			continue
		}
		n, err := strconv.ParseInt(stats[:strings.IndexByte(stats+",", ',')], 10, 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("INFO %s: %w", name, err)
		}
		commands += n
	}
	for _, cmd := range []string{"cmdstat_evalsha", "cmdstat_eval"} {
		// cmdstat_evalsha:calls=12,usec=34,...
		for field := range strings.SplitSeq(infoField(info, cmd), ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, 0, 0, fmt.Errorf("INFO %s: %w", cmd, err)
				}
				calls += n
			}
		}
	}
	for _, key := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(infoField(info, key), 64)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("INFO %s: %w", key, err)
		}
		cpu += v
	}
	return calls, commands, cpu, nil
}

// CeilingPipeline and CeilingClients are redis-benchmark's -P and -c.
const (
	CeilingPipeline = 16
	CeilingClients  = 50 // redis-benchmark's default
)

// errNoRedisBenchmark says that scenario 8 cannot run.
var errNoRedisBenchmark = errors.New("redis-benchmark not found (apt-get install redis-tools)")

// rpsPattern finds the throughput in redis-benchmark's quiet output.
var rpsPattern = regexp.MustCompile(`([0-9.]+) requests per second`)

// Ceiling is scenario 8: the server's throughput of redisync's lock script
// (internal/scripts/mutex_acquire.lua), pipelined CeilingPipeline deep by
// redis-benchmark over CeilingClients connections, n calls. Every call
// repeats the same hold's acquire, which takes what the first one took: the
// cheapest successful path.
// It returns the calls per second and the command line run.
func Ceiling(ctx context.Context, addr string, admin rueidis.Client, n int) (float64, string, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return 0, "", errNoRedisBenchmark
	}
	src := scripts.MutexAcquire.Source
	sha, err := admin.Do(ctx, admin.B().ScriptLoad().Script(src).Build()).ToString()
	if err != nil {
		return 0, "", fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, "", err
	}
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(CeilingClients), "-P", strconv.Itoa(CeilingPipeline),
		"-n", strconv.Itoa(n), "-q", "EVALSHA", sha, "2", "bench:ceiling", "bench:ceiling-latch", "30000", "field", "0"}
	line := "redis-benchmark " + strings.Join(args, " ")
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return 0, line, fmt.Errorf("redis-benchmark: %w: %s", err, out)
	}
	ms := rpsPattern.FindAllSubmatch(out, -1)
	if len(ms) == 0 {
		return 0, line, fmt.Errorf("redis-benchmark: no throughput in %q", out)
	}
	rps, err := strconv.ParseFloat(string(ms[len(ms)-1][1]), 64)
	return rps, line, err
}
