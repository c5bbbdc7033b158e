package redisserver

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// sysProcAttr puts the server in its own process group, so signals reach any
// child it forks, and asks the kernel to SIGKILL it when the thread that
// started it dies. Go does not retire its OS threads in normal operation, so
// in practice the server dies together with the test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// kill sends SIGKILL to the server's whole process group.
func kill(cmd *exec.Cmd) error {
	return signalGroup(cmd, syscall.SIGKILL)
}

// terminate asks the server to shut down with SIGTERM and escalates to
// SIGKILL after grace. It polls instead of waiting in a goroutine so that no
// goroutine is left behind if the process never exits; the caller reaps it.
func terminate(cmd *exec.Cmd, grace time.Duration) error {
	if err := signalGroup(cmd, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if exited(cmd.Process.Pid) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return kill(cmd)
}

// signalGroup signals the process group led by cmd's process. ESRCH means
// the group is already gone, which is what the caller wanted anyway.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

// exited reports whether the child pid has terminated but not yet been
// reaped (a zombie), or is gone entirely. Reading /proc leaves the zombie in
// place, so a later cmd.Wait still gets the real exit status; calling wait4
// with WNOHANG here would steal it.
func exited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is wrapped in parentheses
	// and may itself contain spaces or parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state == 'Z' || state == 'X'
}

// Pause stops the server's process (SIGSTOP): it keeps its connections but
// answers nothing, as a node cut off by a partition would, until Resume.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	if s.cmd == nil {
		return errNotRunning
	}
	return signalGroup(s.cmd, sig)
}
