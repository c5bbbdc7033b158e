// Command rigload shows what a scenario through the delay proxy (D2 by
// default: scenario 2, 64 goroutines of one client with a name each; -scenario
// serial is D1, contended D3) costs the machine it runs on, per library: the CPU per pair of the proxy, of redis-server and of the
// client, and how long a lone PING on a connection of its own takes through
// the same proxy meanwhile, beside the library's own Lock latency. On one
// machine the three processes share its cores, so a library whose pair costs
// them more CPU slows every round trip through the proxy, its own included;
// the lone PING measures that, and what a Lock waits beyond it is the
// library's own.
//
// The proxy runs as a child process (this command with -proxy-to), so that
// its CPU is measured apart from the client's.
//
// Usage, from the benchmarks directory:
//
//	go run ./cmd/rigload [-d 5s] [-rounds 2] [-scenario parallel|serial|contended]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/benchmarks"
	"github.com/go-redisync/redisync/internal/faultproxy"
	"github.com/go-redisync/redisync/internal/redisserver"
)

func main() {
	d := flag.Duration("d", 5*time.Second, "how long each library runs")
	rounds := flag.Int("rounds", 2, "rounds, each library once a round")
	scenario := flag.String("scenario", "parallel", "parallel (D2, redisync and rueidislock), serial (D1) or contended (D3; every library)")
	proxyTo := flag.String("proxy-to", "", "internal: run as the proxy to this address")
	flag.Parse()
	if *proxyTo != "" {
		proxy(*proxyTo)
		return
	}
	sc, ok := scenarios[*scenario]
	if !ok {
		fmt.Fprintf(os.Stderr, "rigload: unknown -scenario %q\n", *scenario)
		os.Exit(2)
	}
	if err := run(*d, *rounds, sc); err != nil {
		fmt.Fprintln(os.Stderr, "rigload:", err)
		os.Exit(1)
	}
}

// proxy forwards to addr with the benchmarks' delay each way, prints its
// address and runs until its standard input closes (its parent ended).
func proxy(addr string) {
	p, err := faultproxy.Start(addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rigload proxy:", err)
		os.Exit(1)
	}
	p.SetLatency(faultproxy.Both, benchmarks.DelayEachWay, 0)
	fmt.Println(p.Addr())
	signal.Ignore(os.Interrupt)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = p.Close()
}

// A scenario is a benchmarks scenario and the libraries it is run for.
type scenario struct {
	run         func(context.Context, benchmarks.Peer, string, time.Duration) (benchmarks.Summary, error)
	rueidisOnly bool // only the libraries on rueidis (D2's comparison)
	unit        string
}

var scenarios = map[string]scenario{
	"parallel":  {benchmarks.Parallel, true, "Lock p50"},
	"serial":    {benchmarks.Serial, false, "pair p50"},
	"contended": {benchmarks.Contended, false, "Lock p50"},
}

func run(d time.Duration, rounds int, sc scenario) error {
	srv, err := redisserver.StartServer()
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.Command(exe, "-proxy-to", srv.Addr)
	stdin, err := child.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return err
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = stdin.Close(); _ = child.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("the proxy did not start: %w", err)
	}
	addr := strings.TrimSpace(line)

	ctx := context.Background()
	probe, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err
	}
	defer probe.Close()
	info, err := probe.Do(ctx, probe.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return err
	}
	_, pidText, _ := strings.Cut(info, "process_id:")
	serverPid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(pidText, "\n", 2)[0]))
	if err != nil {
		return fmt.Errorf("the server's process id: %w", err)
	}
	idle, err := pings(ctx, probe, 2*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("lone PING through the proxy, nothing else running: p50 %v\n\n", idle.Round(time.Microsecond))
	fmt.Printf("| library | per s | CPU each: proxy / server / client | cores busy of 2 | %s | lone PING p50 meanwhile | in PINGs |\n", sc.unit)
	fmt.Println("|---|---|---|---|---|---|---|")
	for range rounds {
		for _, p := range benchmarks.Peers(benchmarks.DefaultPoll) {
			if sc.rueidisOnly && p.Name != "redisync" && p.Name != "rueidislock" {
				continue // the two on rueidis, whose D2 the table compares
			}
			c0 := [3]float64{procCPU(child.Process.Pid), procCPU(serverPid), selfCPU()}
			t0 := time.Now()
			probed := make(chan time.Duration, 1)
			go func() {
				time.Sleep(d / 5) // past the warm-up
				p50, _ := pings(ctx, probe, d*3/5)
				probed <- p50
			}()
			s, err := sc.run(ctx, p, addr, d)
			if err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
			ping := <-probed
			secs := time.Since(t0).Seconds()
			c1 := [3]float64{procCPU(child.Process.Pid), procCPU(serverPid), selfCPU()}
			n := float64(s.N)
			per := func(i int) float64 { return (c1[i] - c0[i]) / n * 1e6 }
			busy := (c1[0] - c0[0] + c1[1] - c0[1] + c1[2] - c0[2]) / secs
			fmt.Printf("| %s | %.0f | %.1f / %.1f / %.1f µs | %.2f | %v | %v | %.2f |\n", p.Name, n/s.Elapsed.Seconds(),
				per(0), per(1), per(2), busy, s.P50.Round(time.Microsecond), ping.Round(time.Microsecond), float64(s.P50)/float64(ping))
		}
	}
	return nil
}

// pings sends one PING at a time on rc, 5 ms apart, for d and returns the
// median round trip.
func pings(ctx context.Context, rc rueidis.Client, d time.Duration) (time.Duration, error) {
	var rtts []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		t := time.Now()
		if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
			return 0, err
		}
		rtts = append(rtts, time.Since(t))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}

// procCPU returns the user and system CPU seconds of process pid (Linux).
func procCPU(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks: USER_HZ is 100 on Linux
}

// selfCPU returns this process's CPU seconds.
func selfCPU() float64 {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e9
}
