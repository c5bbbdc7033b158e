//go:build !linux

package faultproxy

import "time"

// sleepPrecisely sleeps for d (on Linux, in nanosleep; elsewhere as
// time.Sleep does).
func sleepPrecisely(d time.Duration) { time.Sleep(d) }
