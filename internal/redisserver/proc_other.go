//go:build !linux

package redisserver

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// sysProcAttr returns nil: process groups and the parent-death signal are
// only configured on Linux, where the tests normally run.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}

// kill terminates the server process immediately.
func kill(cmd *exec.Cmd) error {
	return cmd.Process.Kill()
}

// terminate kills the server right away: without /proc there is no cheap
// way to notice a graceful exit without a waiter goroutine, and the servers
// keep no data worth a clean shutdown.
func terminate(cmd *exec.Cmd, _ time.Duration) error {
	return kill(cmd)
}

// exited cannot be determined without reaping the child, so it reports
// false; startup failures are then detected through the log or the timeout.
func exited(int) bool {
	return false
}

var errNotSupported = errors.New("redisserver: not supported on this platform")

// Pause is not supported off Linux.
func (s *Server) Pause() error { return errNotSupported }

// Resume is not supported off Linux.
func (s *Server) Resume() error { return errNotSupported }
