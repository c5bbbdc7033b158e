package redisync

// QueueWakeups returns how many wake-up messages (not timers) have ended the
// waits of queued waiters (FairMutex, Semaphore) in this process.
func QueueWakeups() int64 { return queueWakeups.Load() }
