// Package redisserver starts real redis-server processes on loopback: a
// standalone server, a small Redis Cluster (with replicas), or a primary and
// replica behind sentinels. It falls back to an in-process miniredis for a
// standalone server when no redis-server binary is installed. The tests use it
// (through internal/redistest), and so do the redisync command's demo and
// bench, which is why it links no test package.
//
// Servers run without persistence in private temporary directories, are
// placed in their own process group and are killed by the kernel if the test
// process dies, so an aborted test run does not leave servers behind. No
// goroutines outlive Stop or Kill, which keeps goleak-based tests quiet.
package redisserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
)

// InstallHint tells a developer how to make a real redis-server available.
const InstallHint = "install redis-server (apt-get install redis-server redis-sentinel) or set REDIS_SERVER_BIN"

// ErrNoServer is wrapped by every error that stems from a missing
// redis-server binary, so callers can skip tests with errors.Is.
var ErrNoServer = errors.New("redisserver: no redis-server binary: " + InstallHint)

// maxPort is the highest usable TCP port.
const maxPort = 65535

// clusterBusOffset is the distance between a cluster node's client port and
// its cluster bus port when the bus port is not configured explicitly.
const clusterBusOffset = 10000

// ServerBinary returns the path of the redis-server binary to run. The
// REDIS_SERVER_BIN environment variable wins over $PATH; when it is set but
// does not name an existing file, ServerBinary fails instead of silently
// using another binary, which lets the miniredis fallback be exercised with
// REDIS_SERVER_BIN=/nonexistent. All errors wrap ErrNoServer.
func ServerBinary() (string, error) {
	if bin := os.Getenv("REDIS_SERVER_BIN"); bin != "" {
		fi, err := os.Stat(bin)
		if err != nil {
			return "", fmt.Errorf("%w (REDIS_SERVER_BIN: %v)", ErrNoServer, err)
		}
		if fi.IsDir() {
			return "", fmt.Errorf("%w (REDIS_SERVER_BIN=%s is a directory)", ErrNoServer, bin)
		}
		return bin, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrNoServer, err)
	}
	return bin, nil
}

// RequireServer reports whether REDISYNC_REQUIRE_SERVER=1 is set, meaning
// that tests must fail rather than skip or fall back to miniredis when no
// redis-server binary is available (for example in CI).
func RequireServer() bool {
	return os.Getenv("REDISYNC_REQUIRE_SERVER") == "1"
}

// requireError explains that a real server was demanded but is missing; it
// keeps wrapping the ServerBinary error so errors.Is(err, ErrNoServer) holds.
func requireError(err error) error {
	return fmt.Errorf("redisserver: REDISYNC_REQUIRE_SERVER=1 is set: %w", err)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// port is only reserved while probing, so a caller may still lose a race for
// it; StartServer retries in that case.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redisserver: find free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("redisserver: find free port: %w", err)
	}
	return port, nil
}

// freeClusterPort returns a free port whose cluster bus port (port+10000) is
// free and valid as well. Ephemeral ports are often above 55535, where Redis
// refuses to start in cluster mode, hence the loop.
func freeClusterPort() (int, error) {
	for range 100 {
		port, err := FreePort()
		if err != nil {
			return 0, err
		}
		if port+clusterBusOffset > maxPort {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+clusterBusOffset))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("redisserver: find free cluster port: %w", err)
		}
		return port, nil
	}
	return 0, errors.New("redisserver: no free port pair for a cluster node")
}
