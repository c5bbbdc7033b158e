package scripts

// The scripts of Semaphore. Its waiters' heartbeats use FairHeartbeat.
var (
	SemAcquire = load("sem_acquire")
	SemRelease = load("sem_release")
	SemRenew   = load("sem_renew")
)
