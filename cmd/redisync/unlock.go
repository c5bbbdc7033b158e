package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
)

// errDeclined is returned when the operator does not confirm.
var errDeclined = errors.New("not unlocked: not confirmed")

// runUnlock is "redisync unlock --force [--yes] NAME". It shows what it is
// about to delete, asks, and force-unlocks through the library, so that the
// release message wakes the lock's waiters exactly as the library sends it.
func runUnlock(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, "unlock", "unlock --force [--yes] [--kind KIND] [connection flags | --quorum URL ...] NAME")
	var lf lockFlags
	lf.register(fs)
	force := fs.Bool("force", false, "required: delete the lock whoever holds it; its holders lose it")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	name, err := unlockTarget(rest, *lf.kind, *force)
	if err != nil {
		return err
	}
	if len(lf.quorum) > 0 {
		return runUnlockQuorum(ctx, std, &lf.conn, lf.quorum, name, *lf.kind, *yes)
	}
	rc, err := lf.conn.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	info, err := detect(ctx, rc, name, *lf.kind)
	if err != nil {
		return err
	}
	forceUnlock, after, err := forceUnlocker(ctx, info, name)
	if err != nil {
		return err
	}
	return confirmAndForceUnlock(ctx, std, rc, &lf.conn, info, name, *yes, forceUnlock, after)
}

// confirmAndForceUnlock shows info, the lock at name to force-unlock, asks
// for a confirmation unless yes, runs forceUnlock through a Client of rc and
// says what it did and left (after), and whether the holders were told.
func confirmAndForceUnlock(ctx context.Context, std *stdio, rc rueidis.Client, cf *connFlags, info *lockInfo, name string, yes bool,
	forceUnlock func(c *redisync.Client) (bool, error), after string) error {
	printInfo(std.out, info)
	if !info.Locked {
		fmt.Fprintf(std.out, "%s %q is not locked; nothing to unlock\n", info.Kind, name)
		return nil
	}
	if !yes && !confirm(std, fmt.Sprintf("Force-unlock %s %q? Its holders lose it. [y/N] ", info.Kind, name)) {
		return errDeclined
	}
	c, err := redisync.New(rc, append(cf.libOptions(), redisync.WithLogger(slog.New(slog.NewTextHandler(std.err, nil))))...)
	if err != nil {
		return err
	}
	defer c.Close()
	unlocked, err := forceUnlock(c)
	if err != nil || !unlocked {
		if err == nil {
			fmt.Fprintf(std.out, "%q was released meanwhile; nothing to do\n", name)
		}
		return err
	}
	fmt.Fprintf(std.out, "unlocked %q; its waiters were woken\n", name)
	if after != "" {
		fmt.Fprintf(std.out, "(%s)\n", after)
	}
	sayTold(ctx, std, rc, info.Holders, rc.Mode() == rueidis.ClientModeCluster && !cf.classicPubSub)
	return nil
}

// unlockTarget checks unlock's arguments, rest after the flags, and returns
// the lock's name.
func unlockTarget(rest []string, kind string, force bool) (string, error) {
	if err := checkKind(kind); err != nil {
		return "", err
	}
	if len(rest) != 1 {
		return "", usagef("want one lock NAME, got %d arguments", len(rest))
	}
	name := rest[0]
	if !force {
		return "", usagef("unlock needs --force: it takes %q away from whoever holds it, who may still be in its critical section", name)
	}
	if err := layout.Check(name); err != nil {
		return "", usagef("invalid lock name %q: %v", name, err)
	}
	return name, nil
}

// forceUnlocker returns the force unlock of the primitive info describes at
// name, and what it leaves behind, said after it; or why there is none.
func forceUnlocker(ctx context.Context, info *lockInfo, name string) (func(c *redisync.Client) (bool, error), string, error) {
	var f func(c *redisync.Client) (bool, error)
	var after string
	switch info.Kind {
	case kindMutex:
		f = func(c *redisync.Client) (bool, error) { return c.NewMutex(name).ForceUnlock(ctx) }
	case kindRFairLock:
		f = func(c *redisync.Client) (bool, error) { return c.NewRedissonFairMutex(name).ForceUnlock(ctx) }
		after = "Redisson's queue is kept; its first waiter was woken on its own channel, as a Java forceUnlock does"
	case kindFencedMutex:
		f = func(c *redisync.Client) (bool, error) { return c.NewFencedMutex(name).ForceUnlock(ctx) }
		after = fmt.Sprintf("the token counter %s is kept (latest token %d): tokens never go back, and the next holder's is higher", info.TokenKey, *info.Token)
	case kindRWMutex:
		f = func(c *redisync.Client) (bool, error) { return c.NewRWMutex(name).ForceUnlock(ctx) }
		after = "readers and writer alike lost it; waiting writers' claims and the read holds' timeout keys lapse by themselves"
	case kindFairMutex:
		f = func(c *redisync.Client) (bool, error) { return c.NewFairMutex(name).ForceUnlock(ctx) }
		after = "the queue is kept: the waiter whose turn is next was woken, and the others keep their turns"
	case kindSemaphore:
		f = func(c *redisync.Client) (bool, error) { return c.NewSemaphore(name, 0).ForceUnlock(ctx) }
		after = "every holder lost its permits; the size and the queue are kept, and the queued requests that fit were woken"
	case kindOnce:
		f = func(c *redisync.Client) (bool, error) { return c.NewOnce(name).ForceUnlock(ctx) }
		after = "the caller running the function lost its claim (its function's context is cancelled); a waiting caller runs the function again"
	case kindElection:
		f = func(c *redisync.Client) (bool, error) { return c.NewElection(name).ForceUnlock(ctx) }
		after = "the leader lost its leadership (its Done closes, its Err reports the loss); a waiting campaigner is elected"
	case kindRPermitExpirableSemaphore:
		return nil, "", errors.New("force unlock of an RPermitExpirableSemaphore is not supported: its permits are released by id (Java's release(permitId), Go's ExpirableSemaphore.Release), and a permit whose lease ended is free already")
	case kindWaitGroup:
		return nil, "", fmt.Errorf("a WaitGroup holds no lock to take away: change its counter with Add (count %d)", *info.Count)
	default:
		return nil, "", fmt.Errorf("force unlock of a %s is not supported", info.Kind)
	}
	return f, after, nil
}

// sayTold says, for each Client among holders, whether it was told of its
// loss at once: whether it listens on its channel, where the force unlock
// published the holds it took away. One that does not (its process is gone,
// or it is not redisync's: a Java client) learns at its next renewal, if it
// lives.
func sayTold(ctx context.Context, std *stdio, rc rueidis.Client, holders []holderInfo, sharded bool) {
	seen := map[string]bool{}
	for _, h := range holders {
		if h.Client == "" || seen[h.Client] {
			continue
		}
		seen[h.Client] = true
		channel := layout.ClientChannel(h.Client)
		cmd := rc.B().PubsubNumsub().Channel(channel).Build()
		if sharded {
			cmd = rc.B().PubsubShardnumsub().Channel(channel).Build()
		}
		counts, err := rc.Do(ctx, cmd).AsIntMap()
		switch {
		case err != nil:
			fmt.Fprintf(std.out, "holder %s: could not tell whether it was told (%v)\n", shownClient(h.Client, h.ClientName), err)
		case counts[channel] > 0:
			fmt.Fprintf(std.out, "holder %s was told at once (its Done closed)\n", shownClient(h.Client, h.ClientName))
		default:
			fmt.Fprintf(std.out, "holder %s was not listening (its process is gone, or it is not redisync): it learns at its next renewal, if it lives\n", shownClient(h.Client, h.ClientName))
		}
	}
}

// confirm asks question on std.out and reports whether the answer read from
// std.in is yes. End of input counts as no.
func confirm(std *stdio, question string) bool {
	fmt.Fprint(std.out, question)
	line, err := bufio.NewReader(std.in).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(std.out)
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
