// Package redistest is the tests' support: a TestMain that checks for leaked
// goroutines (Run, Main), key names that a second run of a test does not
// share with the first (Name), command counters read from the server, and a
// proxy that loses replies on purpose. The servers themselves come from
// internal/redisserver.
package redistest
