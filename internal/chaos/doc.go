// Package chaos is the fault-injection suite's model: the events that worker
// processes record while they drive redisync's primitives, the faults that
// the coordinator injects, the invariant checkers that run over the recorded
// history afterwards, and the report of a run.
//
// The suite itself (the coordinator, the workers and the fault schedule) is
// TestChaos in this package's tests; RELIABILITY.md at the repository root
// says what it checks and how to run it. The checkers are plain functions of
// a [History], tested here on small hand-made histories, good and bad.
//
// Time is CLOCK_MONOTONIC in nanoseconds ([Now]): one clock for every process
// of the machine, so events of different workers and of the coordinator can
// be ordered. Every invariant is decided from call and return times, and an
// operation whose outcome a process did not see (it was killed) is treated as
// possibly having happened at any time after its call, never as failed.
package chaos
