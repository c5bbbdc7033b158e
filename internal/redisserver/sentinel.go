package redisserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// MasterSet is the name under which the test sentinels monitor the primary.
const MasterSet = "redistest"

// A SentinelSet is a primary, a replica and three sentinels on loopback, with
// the short timeouts that let a failover finish in a few seconds.
type SentinelSet struct {
	Primary   *Server   // the primary as started (a failover promotes Replica)
	Replica   *Server   // its replica as started
	Sentinels []*Server // the three sentinels
	// Addrs are the sentinels' addresses, which clients start from.
	Addrs []string
}

// StartSentinelSet starts the primary, its replica and three sentinels, and
// waits until every sentinel knows the replica and the other sentinels, so
// that a failover can be agreed on right away.
func StartSentinelSet() (*SentinelSet, error) {
	ss := &SentinelSet{}
	var err error
	if ss.Primary, err = StartServer("--repl-diskless-sync-delay", "0"); err != nil {
		return nil, err
	}
	if ss.Replica, err = StartServer("--replicaof", "127.0.0.1", strconv.Itoa(ss.Primary.Port),
		"--repl-diskless-sync-delay", "0"); err != nil {
		return nil, errors.Join(err, ss.Stop())
	}
	conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 4000\n"+
		"sentinel parallel-syncs %[1]s 1\n", MasterSet, ss.Primary.Port)
	for range 3 {
		s, err := startServerConf(FreePort, conf, []string{"--sentinel"})
		if err != nil {
			return nil, errors.Join(err, ss.Stop())
		}
		ss.Sentinels = append(ss.Sentinels, s)
		ss.Addrs = append(ss.Addrs, s.Addr)
	}
	if err := ss.waitReady(); err != nil {
		return nil, errors.Join(err, ss.Stop())
	}
	return ss, nil
}

// Stop stops every process of the set and removes their directories.
func (ss *SentinelSet) Stop() error {
	var errs []error
	for _, s := range append([]*Server{ss.Primary, ss.Replica}, ss.Sentinels...) {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}

// Failover asks a sentinel to fail the primary over to the replica and
// waits until every sentinel names the new primary, the new primary answers
// as one, and the old one no longer does (the sentinels turned it into a
// replica: until then it takes writes that the new primary never sees). It
// returns the new primary's address. A failover the sentinels give up (the
// replica did not answer as the new primary within the failover timeout,
// as on a loaded machine) is asked for again, every failoverRetry while the
// sentinels still name the old primary.
func (ss *SentinelSet) Failover(ctx context.Context) (string, error) {
	old, err := ss.primaryAddr(ctx, ss.Sentinels[0])
	if err != nil {
		return "", err
	}
	if err := ss.do(ctx, ss.Sentinels[0], "SENTINEL", "FAILOVER", MasterSet); err != nil {
		return "", fmt.Errorf("redisserver: SENTINEL FAILOVER: %w", err)
	}
	asked := time.Now()
	for {
		addr, err := ss.agreedPrimary(ctx)
		if err == nil && addr != old && ss.isPrimary(ctx, addr) && ss.isReplica(ctx, old) {
			return addr, nil
		}
		if err == nil && addr == old && time.Since(asked) >= failoverRetry {
			// Refused while a failover is in progress (INPROG) or no replica
			// is fit yet (NOGOODSLAVE): asked again later.
			_ = ss.do(ctx, ss.Sentinels[0], "SENTINEL", "FAILOVER", MasterSet)
			asked = time.Now()
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("redisserver: failover from %s not finished: %w", old, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// failoverRetry is how long Failover waits for the sentinels to name a new
// primary before it asks again: more than the failover timeout (4 s, see
// the sentinels' configuration), after which they give a failover up.
const failoverRetry = 6 * time.Second

// waitReady polls the sentinels until each sees the replica and two peers.
func (ss *SentinelSet) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		pending := ""
		for _, s := range ss.Sentinels {
			info, err := ss.info(ctx, s)
			switch {
			case err != nil:
				pending = err.Error()
			case !strings.Contains(info, "slaves=1,sentinels=3"):
				pending = s.Addr + ": " + info
			}
			if pending != "" {
				break
			}
		}
		if pending == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisserver: sentinels not ready: %s", pending)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// info returns the master0 line of a sentinel's INFO sentinel section.
func (ss *SentinelSet) info(ctx context.Context, s *Server) (string, error) {
	return withNode(ctx, s.Addr, func(c rueidis.Client) (string, error) {
		info, err := c.Do(ctx, c.B().Info().Section("sentinel").Build()).ToString()
		for _, line := range strings.Split(strings.TrimPrefix(info, "txt:"), "\n") {
			if strings.HasPrefix(line, "master0:") {
				return strings.TrimSpace(line), err
			}
		}
		return "", err
	})
}

// primaryAddr returns the primary a sentinel names.
func (ss *SentinelSet) primaryAddr(ctx context.Context, s *Server) (string, error) {
	return withNode(ctx, s.Addr, func(c rueidis.Client) (string, error) {
		hp, err := c.Do(ctx, c.B().SentinelGetMasterAddrByName().Master(MasterSet).Build()).AsStrSlice()
		if err != nil || len(hp) != 2 {
			return "", fmt.Errorf("redisserver: get-master-addr-by-name on %s: %v %v", s.Addr, hp, err)
		}
		return hp[0] + ":" + hp[1], nil
	})
}

// agreedPrimary returns the primary when every sentinel names the same one.
func (ss *SentinelSet) agreedPrimary(ctx context.Context) (string, error) {
	var addr string
	for _, s := range ss.Sentinels {
		a, err := ss.primaryAddr(ctx, s)
		if err != nil {
			return "", err
		}
		if addr != "" && a != addr {
			return "", fmt.Errorf("sentinels disagree: %s, %s", addr, a)
		}
		addr = a
	}
	return addr, nil
}

// isPrimary reports whether the server at addr says it is a master.
func (ss *SentinelSet) isPrimary(ctx context.Context, addr string) bool {
	return ss.role(ctx, addr) == "master"
}

// isReplica reports whether the server at addr says it is a replica.
func (ss *SentinelSet) isReplica(ctx context.Context, addr string) bool {
	return ss.role(ctx, addr) == "slave"
}

// role returns the role the server at addr gives (ROLE's first word), or ""
// when it does not answer.
func (ss *SentinelSet) role(ctx context.Context, addr string) string {
	role, err := withNode(ctx, addr, func(c rueidis.Client) (string, error) {
		vals, err := c.Do(ctx, c.B().Role().Build()).ToArray()
		if err != nil || len(vals) == 0 {
			return "", err
		}
		return vals[0].ToString()
	})
	if err != nil {
		return ""
	}
	return role
}

func (ss *SentinelSet) do(ctx context.Context, s *Server, args ...string) error {
	_, err := withNode(ctx, s.Addr, func(c rueidis.Client) (string, error) {
		return "", c.Do(ctx, c.B().Arbitrary(args...).Build()).Error()
	})
	return err
}

// withNode runs f with a short-lived single-node client of addr.
func withNode(ctx context.Context, addr string, f func(rueidis.Client) (string, error)) (string, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true,
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return f(c)
}
