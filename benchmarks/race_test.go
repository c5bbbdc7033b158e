//go:build race

package benchmarks_test

// raceEnabled reports a build with the race detector, whose sync.Pool drops
// items at random.
const raceEnabled = true
