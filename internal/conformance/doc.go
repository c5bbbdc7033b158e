// Package conformance holds no code: its tests are ports of the tests of
// Go's sync package (Mutex, RWMutex, Once, WaitGroup, and Cond with a
// redisync lock as its Locker) and of golang.org/x/sync/semaphore, run
// against redisync's primitives on real Redis servers.
//
// Each test keeps the structure and the assertions of the one it ports and
// runs on four layouts of handles: one handle for every goroutine, a handle
// per goroutine, handles spread over three Clients, and two Clients on each
// of which some goroutines share a handle and the others have their own;
// and, where a test is about locks, on every lock kind whose API it uses.
// Where redisync differs from sync on purpose (a misuse that panics
// recoverably, an error instead of a panic, fewer loops to keep the run
// short), a comment beside the test says so and cites the doc it follows.
//
// REDISYNC_CONFORMANCE_TOPOLOGIES (default "standalone,cluster,sentinel")
// chooses the servers; .ci/run runs the suite once more with -cpu 1 on the
// standalone server.
package conformance
