//go:build !unix

package main

import (
	"errors"
	"os"
)

// canPause reports whether worker processes can be paused and resumed: not
// without SIGSTOP and SIGCONT.
const canPause = false

var errNoPause = errors.New("pausing a process needs SIGSTOP (a Unix system)")

func pauseProcess(*os.Process) error   { return errNoPause }
func resumeProcess(*os.Process) error  { return errNoPause }
func notifyContinue() <-chan os.Signal { return nil }
