//go:build race

package chaos

// raceDetector reports that the test binary runs under the race detector.
const raceDetector = true
