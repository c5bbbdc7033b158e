package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync/internal/redisserver"
)

// A server is where demo and bench run: a given one, or one they started.
type server struct {
	opt  rueidis.ClientOption
	url  string   // for worker processes, passed in REDIS_URL
	args []string // connection flags for worker processes (--cluster, ...)
	desc string
	stop func()
}

// serverFor returns the server named by the connection flags, checked to
// answer, or, when none is named, an embedded one: a redis-server child on a
// free loopback port when one is installed, else an in-process miniredis.
// The caller calls stop when done; it stops what serverFor started.
func serverFor(ctx context.Context, std *stdio, cf *connFlags) (*server, error) {
	if cf.given() {
		opt, err := cf.options()
		if err != nil {
			return nil, err
		}
		rc, err := dial(ctx, opt)
		if err != nil {
			return nil, err
		}
		rc.Close()
		s := &server{opt: opt, url: cf.rawURL(), stop: func() {}}
		s.desc = "Redis at " + strings.Join(opt.InitAddress, ",")
		if cf.cluster {
			s.args = append(s.args, "--cluster")
			s.desc = "Redis Cluster at " + strings.Join(opt.InitAddress, ",")
		}
		if cf.sentinelMaster != "" {
			s.args = append(s.args, "--sentinel-master", cf.sentinelMaster)
		}
		return s, nil
	}
	tg, err := redisserver.StartStandalone()
	if err != nil {
		return nil, fmt.Errorf("start an embedded server: %w", err)
	}
	s := &server{url: "redis://" + tg.Addrs[0], stop: func() { _ = tg.Stop() }}
	if tg.Mini != nil {
		// miniredis serves Pub/Sub on a shared rueidis client only in RESP2.
		s.url += "?protocol=2"
		s.desc = "embedded miniredis on " + tg.Addrs[0] + " (no redis-server found: " + redisserver.InstallHint + ")"
	} else {
		s.desc = "embedded redis-server on " + tg.Addrs[0]
	}
	s.opt, err = (&connFlags{url: s.url}).options()
	if err != nil {
		s.stop()
		return nil, err
	}
	fmt.Fprintf(std.out, "started %s\n", s.desc)
	return s, nil
}
