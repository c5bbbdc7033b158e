// Package benchmarks compares redisync with the other Redis lock libraries
// for Go — github.com/go-redsync/redsync/v4, github.com/bsm/redislock and
// rueidis's rueidislock — on one redis-server, scenario by scenario: serial
// latency, parallel throughput, contention across processes and
// within one, renewal cost, allocations and heap, waiter scale and the
// server's own ceiling.
//
// It is a module of its own so that the library depends on rueidis only.
// The table is produced by
//
//	cd benchmarks && go run ./cmd/compare
//
// and the same scenarios run as go test benchmarks (compare_test.go) whose
// output benchstat compares.
package benchmarks
