package redisync_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
)

// A nil Option is an invalid one: New and NewQuorum return an error that
// says which, and every handle constructor panics with that message.
func TestNilOption(t *testing.T) {
	rc := newRueidis(t, standalone)
	_, err := redisync.New(rc, redisync.WithLogger(testLogger(t)), nil)
	assert.EqualError(t, err, "redisync: option 2 of 2 is nil")
	_, err = redisync.NewQuorum([]rueidis.Client{rc, rc, rc}, nil)
	assert.EqualError(t, err, "redisync: option 1 of 1 is nil")

	c, _ := newClient(t, standalone)
	name := t.Name()
	constructors := map[string]func(opt redisync.Option){
		"NewMutex":              func(opt redisync.Option) { c.NewMutex(name, opt) },
		"NewFencedMutex":        func(opt redisync.Option) { c.NewFencedMutex(name, opt) },
		"NewRWMutex":            func(opt redisync.Option) { c.NewRWMutex(name, opt) },
		"NewFairMutex":          func(opt redisync.Option) { c.NewFairMutex(name, opt) },
		"NewRedissonFairMutex":  func(opt redisync.Option) { c.NewRedissonFairMutex(name, opt) },
		"NewMultiMutex":         func(opt redisync.Option) { c.NewMultiMutex([]string{name}, opt) },
		"NewSemaphore":          func(opt redisync.Option) { c.NewSemaphore(name, 1, opt) },
		"NewCountingSemaphore":  func(opt redisync.Option) { c.NewCountingSemaphore(name, 1, opt) },
		"NewExpirableSemaphore": func(opt redisync.Option) { c.NewExpirableSemaphore(name, 1, opt) },
		"NewOnce":               func(opt redisync.Option) { c.NewOnce(name, opt) },
		"NewWaitGroup":          func(opt redisync.Option) { c.NewWaitGroup(name, opt) },
		"NewElection":           func(opt redisync.Option) { c.NewElection(name, opt) },
	}
	for constructor, make := range constructors {
		require.NotPanics(t, func() { make(redisync.WithLogger(testLogger(t))) }, constructor)
		assert.PanicsWithValue(t, "redisync: option 1 of 1 is nil", func() { make(nil) }, constructor)
	}
}
