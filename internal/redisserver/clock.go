package redisserver

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

//go:embed clockshim/clockshim.c
var clockShimSource []byte

// ErrNoCompiler is returned by StartSkewed when there is no C compiler to
// build the clock shim with.
var ErrNoCompiler = errors.New("redisserver: no C compiler (cc) to build the clock shim: apt-get install gcc")

// clockShim builds clockshim.c once per process and returns the library's
// path.
var clockShim = sync.OnceValues(func() (string, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return "", ErrNoCompiler
	}
	dir, err := os.MkdirTemp("", "redistest-clockshim-")
	if err != nil {
		return "", fmt.Errorf("redisserver: %w", err)
	}
	src, lib := filepath.Join(dir, "clockshim.c"), filepath.Join(dir, "clockshim.so")
	if err := os.WriteFile(src, clockShimSource, 0o600); err != nil {
		return "", fmt.Errorf("redisserver: %w", err)
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", lib, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("redisserver: build the clock shim: %v\n%s", err, out)
	}
	return lib, nil
})

// A SkewedServer is a redis-server whose wall clock the test can step while
// it runs (its monotonic clock is left alone, as an NTP step leaves it).
// libfaketime would be the usual tool, but it cannot initialise in a process
// that uses jemalloc, as Debian's redis-server does; clockshim.c can.
type SkewedServer struct {
	*Server
	offset *os.File // 8 bytes: the offset in microseconds, mapped by the shim
}

// StartSkewed starts a redis-server whose wall clock is the real time until
// Step moves it.
func StartSkewed(args ...string) (*SkewedServer, error) {
	lib, err := clockShim()
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "redistest-clock-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: %w", err)
	}
	s := &SkewedServer{offset: f}
	if err := s.Step(0); err != nil {
		_ = s.cleanup()
		return nil, err
	}
	s.Server, err = startServerEnv([]string{"LD_PRELOAD=" + lib, "REDISYNC_CLOCK_FILE=" + f.Name()}, args)
	if err != nil {
		_ = s.cleanup()
		return nil, err
	}
	return s, nil
}

// Step sets the server's wall clock to the real time plus offset, at once.
func (s *SkewedServer) Step(offset time.Duration) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(offset.Microseconds()))
	if _, err := s.offset.WriteAt(b[:], 0); err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	return nil
}

// Stop stops the server and removes its clock file.
func (s *SkewedServer) Stop() error {
	return errors.Join(s.Server.Stop(), s.cleanup())
}

func (s *SkewedServer) cleanup() error {
	return errors.Join(s.offset.Close(), os.Remove(s.offset.Name()))
}
