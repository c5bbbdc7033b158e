// Command delayproxy runs the benchmarks' delay proxy in a process of its
// own: it forwards to -to, holding each request and each reply -delay, and
// prints the address it listens on.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/go-redisync/redisync/benchmarks"
	"github.com/go-redisync/redisync/internal/faultproxy"
)

func main() {
	to := flag.String("to", "", "the Redis server's address")
	delay := flag.Duration("delay", benchmarks.DelayEachWay, "how long each way is held")
	flag.Parse()
	p, err := faultproxy.Start(*to)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delayproxy:", err)
		os.Exit(1)
	}
	p.SetLatency(faultproxy.Both, *delay, 0)
	fmt.Println(p.Addr())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
	_ = p.Close()
}
