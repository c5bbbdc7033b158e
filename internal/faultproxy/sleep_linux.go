package faultproxy

import (
	"syscall"
	"time"
)

// prSetTimerslack is prctl's PR_SET_TIMERSLACK (linux/prctl.h).
const prSetTimerslack = 29

// sleepPrecisely blocks the calling goroutine's thread in nanosleep for d,
// with the thread's timer slack (50 µs by default) set to a nanosecond, so
// that it wakes within tens of microseconds; the runtime hands the
// goroutine's processor to others meanwhile.
func sleepPrecisely(d time.Duration) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
