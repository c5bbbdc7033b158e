//go:build !linux

package main

import "syscall"

// workerProcAttr returns nil: only Linux can tie a child's life to its
// parent's. Demo workers also stop on their own (see workerMaxHang).
func workerProcAttr() *syscall.SysProcAttr { return nil }
