//go:build redisync_mutants

// Package mutant switches on deliberately broken variants of redisync, so that
// the chaos suite (internal/chaos) can show that each of its invariant
// checkers catches the bug it is there for.
//
// A variant exists only in a build with the redisync_mutants tag, and only the
// one named by the REDISYNC_MUTANT environment variable is on. The package
// itself is built with that tag only: each package with variants switches
// them in a mutants_on.go file of the same tag, and its mutants_off.go, the
// normal build's, holds them as false constants, so that the broken code
// paths compile away and a normal build has no variant at all (checked by
// TestNoMutantsInTheNormalBuild).
//
// The variants:
//
//	unlock-any      a Mutex release deletes the lock whoever holds it: neither the
//	                Client's record of the hold nor the script checks the owner (I1)
//	fence-lower     a Fence accepts a token lower than one it has seen (I2)
//	no-fallback     a waiter waits for a wake-up message only, never for the lease (I3)
//	fair-barge      any FairMutex waiter may take a free lock, not only the head (I4)
//	renew-blind     a Mutex renewal reports success when the hold is gone (I5)
//	leak-subscribe  the subscriber never unsubscribes a channel (I6)
//	owner-field     every hold of an owner has the same field in Redis, so an
//	                acquire takes over the entry of the owner's previous hold
//	                and a late release of that hold ends the new one (I1)
//	once-rerun      a Once's claim ignores that its function has succeeded, so
//	                the function runs again (I7)
//	wg-early        a WaitGroup's counter is taken for zero, deleted and
//	                announced, when it reaches one (I8)
//	election-steal  a campaign wins while another campaigner leads, beside
//	                it (I1)
//	multi-partial   a MultiMutex takes its names while any but the first is
//	                held by someone else (I1)
//	handover-release  a Mutex hold handed to another handle of the Client is
//	                also released in Redis, where anyone may then take it (I1)
//	hand-any        a Mutex waiter queued in Redis takes any wake-up for a
//	                handover of the lock, not only one naming its place (I1)
//	no-echo         a Mutex release that hands the lock to a queued waiter
//	                publishes only its place number, not the "0" after it,
//	                so the waiters outside the queue sleep on the lease they
//	                read while a dead queued waiter's hold lapses (I9)
//	xsem-overdraw   an ExpirableSemaphore takes a permit when the count is
//	                one short (I1)
//	csem-overdraw   a CountingSemaphore takes a permit when the count is one
//	                short (I1)
//	rfair-barge     any waiter of a FairMutex in Redisson's layout may take a
//	                free lock, not only the head of the line (I4)
//	quorum-minority a quorum acquire holds when one server granted it, not a
//	                majority (I1, on the chaos suite's quorum topology)
//	quorum-vote-at-once  a quorum server that restarted empty votes at
//	                once, not after every lease it could have granted ran
//	                out (I1, under F21 on the quorum topology)
//	unlock-pool     Unlock's release budget comes from a pool and goes back
//	                when the release returns, while a quorum's per-server
//	                context derived from it may still read it: the process
//	                crashes (I0, under F22 on the quorum topology)
//	sem-float       a Semaphore holder's entry is written from the Lua number
//	                of its permits, which Lua prints with 14 digits, so that
//	                a holder of 2^52-1 permits counts as 4 (I1)
//	renew-inline    the renewal scheduler's goroutine sends each round's
//	                renewals itself and waits for them however long Redis
//	                takes, so that a renewal stuck in rueidis holds back the
//	                report of every deadline (I5, under F23)
//	sem-late        a Semaphore's grant whose reply was read after the lease
//	                it set could have run out is returned as a hold (I1,
//	                under F24)
//	takeback-sync   a call that gives up takes back what its attempts may
//	                have left in Redis before it returns, however long Redis
//	                takes to answer, instead of leaving it to the background
//	                after a short wait (I10, under F5)
package mutant
