//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// canPause reports whether worker processes can be paused and resumed.
const canPause = true

// pauseProcess stops p with SIGSTOP, as a long GC pause or a stalled VM
// would: it keeps its state and runs on after resumeProcess.
func pauseProcess(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

// resumeProcess continues a process stopped by pauseProcess (SIGCONT).
func resumeProcess(p *os.Process) error { return p.Signal(syscall.SIGCONT) }

// notifyContinue returns a channel that receives the SIGCONT that resumes
// this process after a pause.
func notifyContinue() <-chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCONT)
	return ch
}
