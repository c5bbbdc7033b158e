package main

import "syscall"

// workerProcAttr asks the kernel to kill a demo worker when the demo dies, so
// an aborted demo leaves no worker waiting on a lock.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
