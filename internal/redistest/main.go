package redistest

import (
	"flag"
	"fmt"
	"github.com/go-redisync/redisync/internal/redisserver"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Run runs a package's tests between setup and teardown, then fails the run
// if goroutines are left behind: servers and clients are stopped first, so a
// goroutine that survives them is a leak of the code under test. It returns
// the exit code for os.Exit.
func Run(m *testing.M, setup func() error, teardown func()) int {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	teardown()
	if code == 0 {
		// rueidis's cluster client refreshes its slot map from a goroutine
		// that first sleeps up to a second, even when the client is closed
		// meanwhile: give such goroutines time to finish before calling them
		// leaks.
		err := goleak.Find()
		for deadline := time.Now().Add(3 * time.Second); err != nil && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
			err = goleak.Find()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

// Main is a TestMain for packages that need one standalone server: it starts
// it into *target, runs the tests, stops it, checks for leaks, and exits.
func Main(m *testing.M, target **redisserver.Target) {
	os.Exit(Run(m,
		func() (err error) {
			*target, err = redisserver.StartStandalone()
			return err
		},
		func() { _ = (*target).Stop() }))
}

// Parallel makes n the number of parallel tests (t.Parallel) that run at
// once, unless -test.parallel was given: the package's parallel tests wait
// for leases and heartbeats to run out, not for the CPU, and the default
// (GOMAXPROCS) would run them two at a time on a 2-core machine. Without a
// redis-server binary the tests run on miniredis, in this process, whose
// expiry and replies slow down under many tests at once: there they run one
// at a time, as tests without t.Parallel do. Call it in TestMain, before Run.
func Parallel(n int) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given {
		return
	}
	if _, err := redisserver.ServerBinary(); err != nil {
		n = 1
	}
	_ = flag.Set("test.parallel", strconv.Itoa(n))
}
