package redisync

import "context"

// OpLock exposes the per-owner call lock to the tests.
type OpLock struct{ l opLock }

func (o *OpLock) Lock(ctx context.Context) error { return o.l.lock(ctx) }
func (o *OpLock) TryLock() bool                  { return o.l.tryLock() }
func (o *OpLock) Unlock()                        { o.l.unlock() }
