package chaos

import "golang.org/x/sys/unix"

// Now returns CLOCK_MONOTONIC in nanoseconds, comparable across the processes
// of one machine (Go's own monotonic readings are relative to each process's
// start and are not).
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("chaos: clock_gettime: " + err.Error())
	}
	return ts.Nano()
}
