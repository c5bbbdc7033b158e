package scripts

// The scripts of FairMutex. FairHeartbeat serves every queue of waiters with
// heartbeats (the Semaphore's too).
var (
	FairAcquire     = load("fair_acquire")
	FairRelease     = load("fair_release")
	FairForceUnlock = load("fair_force_unlock")
	FairHeartbeat   = load("fair_heartbeat")
)
