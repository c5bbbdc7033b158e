package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-redisync/redisync/internal/layout"
)

// runInspect is "redisync inspect [--json] NAME".
func runInspect(ctx context.Context, std *stdio, args []string) error {
	fs := newFlagSet(std, "inspect", "inspect [--json] [--kind KIND] [connection flags | --quorum URL ...] NAME")
	var lf lockFlags
	lf.register(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := checkKind(*lf.kind); err != nil {
		return err
	}
	if len(rest) != 1 {
		return usagef("want one lock NAME, got %d arguments", len(rest))
	}
	if len(lf.quorum) > 0 {
		return runInspectQuorum(ctx, std, &lf.conn, lf.quorum, rest[0], *lf.kind, *asJSON)
	}
	rc, err := lf.conn.connect(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	info, err := detect(ctx, rc, rest[0], *lf.kind)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	printInfo(std.out, info)
	return nil
}

// printInfo writes info as text: a headline, one row per holder, then what
// the primitive has besides: waiting writers, the latest token, a fence.
func printInfo(w io.Writer, info *lockInfo) {
	fmt.Fprintf(w, "%s %q: %s\n", info.Kind, info.Name, headline(info))
	if info.Kind == kindWaitGroup {
		fmt.Fprintln(w, "\n  (a CountingSemaphore, Redisson's RSemaphore, keeps its free permits in the same form at its name: if this is one, the count is its free permits)")
	}
	if len(info.Holders) > 0 && info.Kind == kindSemaphore {
		fmt.Fprintln(w)
		printSemHolders(w, info)
	} else if len(info.Holders) > 0 && info.Kind == kindRPermitExpirableSemaphore {
		fmt.Fprintln(w)
		printRPermits(w, info)
	} else if len(info.Holders) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		if info.Kind == kindRWMutex {
			fmt.Fprintln(tw, "  CLIENT\tOWNER\tMODE\tHOLDS\tTTL")
			for _, h := range info.Holders {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", shownClient(h.Client, h.ClientName), h.Owner, h.Mode, h.Count, holdTTLs(h))
			}
		} else {
			fmt.Fprintln(tw, "  CLIENT\tOWNER\tHOLDS\tTTL")
			for _, h := range info.Holders {
				fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", shownClient(h.Client, h.ClientName), h.Owner, h.Count, formatTTL(h.TTLMillis))
			}
		}
		_ = tw.Flush()
	}
	printWaiters(w, info)
	printWaitingWriters(w, info)
	if info.Token != nil || info.Fence != nil {
		fmt.Fprintln(w)
	}
	if info.Token != nil {
		fmt.Fprintf(w, "  latest token: %d (counter %s; kept after release: the next token is higher)\n", *info.Token, info.TokenKey)
	}
	if f := info.Fence; f != nil {
		fmt.Fprintf(w, "  fence %s: highest accepted token %d, value %d bytes (writes with a lower token are rejected)\n", f.Key, f.Token, f.ValueBytes)
	}
	for _, k := range info.Also {
		fmt.Fprintf(w, "\n  a %s is stored under this name too (a different lock): see it with --kind %s\n", k, k)
	}
}

// printWaitingWriters prints an RWMutex's waiting writers and their claims.
func printWaitingWriters(w io.Writer, info *lockInfo) {
	if len(info.WaitingWriters) == 0 {
		return
	}
	fmt.Fprintln(w, "\n  waiting writers (new readers wait behind them):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLIENT\tOWNER\tCLAIM")
	for _, ww := range info.WaitingWriters {
		claim := fmt.Sprintf("lapses in %s unless it tries again", durationMS(ww.ClaimMillis))
		if ww.ClaimMillis <= 0 {
			claim = fmt.Sprintf("lapsed %s ago: ignored (its writer gave up or died)", durationMS(-ww.ClaimMillis))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", shownClient(ww.Client, ww.ClientName), ww.Owner, claim)
	}
	_ = tw.Flush()
}

// headline is the state shown after a lock's kind and name.
func headline(info *lockInfo) string {
	switch {
	case info.Kind == kindFence:
		return "a fenced resource's record; no lock is stored under this name"
	case info.Kind == kindSemaphore:
		return semHeadline(info) + queued(info)
	case info.Kind == kindRPermitExpirableSemaphore:
		return rpermitHeadline(info)
	case info.Kind == kindOnce:
		return onceHeadline(info)
	case info.Kind == kindWaitGroup:
		return waitGroupHeadline(info)
	case info.Kind == kindElection:
		return electionHeadline(info)
	case (info.Kind == kindFairMutex || info.Kind == kindMutex || info.Kind == kindRFairLock) && !info.Locked:
		return "not locked" + queued(info)
	case info.Kind == kindFairMutex || info.Kind == kindMutex || info.Kind == kindRFairLock:
		return "locked, " + formatTTL(info.TTLMillis) + queued(info)
	case !info.Locked:
		return "not locked"
	case info.Mode == layout.RWWrite:
		return "locked for writing, " + formatTTL(info.TTLMillis)
	case info.Mode == layout.RWRead:
		readers := 0
		for _, h := range info.Holders {
			if h.Mode == layout.RWRead {
				readers++
			}
		}
		noun := "readers"
		if readers == 1 {
			noun = "reader"
		}
		return fmt.Sprintf("locked for reading by %d %s, %s", readers, noun, formatTTL(info.TTLMillis))
	}
	return "locked, " + formatTTL(info.TTLMillis)
}

// holdTTLs describes an RWMutex holder's lease: a reader with several read
// holds has one lease per hold.
func holdTTLs(h holderInfo) string {
	s := formatTTL(h.TTLMillis)
	if len(h.HoldTTLsMillis) < 2 {
		return s
	}
	each := make([]string, len(h.HoldTTLsMillis))
	for i, ms := range h.HoldTTLsMillis {
		each[i] = durationMS(ms)
		if ms == 0 {
			each[i] = "expired"
		}
	}
	return s + " (holds: " + strings.Join(each, ", ") + ")"
}

// durationMS formats milliseconds as a duration.
func durationMS(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }

// formatTTL describes a remaining lease given in milliseconds.
func formatTTL(ms int64) string {
	switch {
	case ms < 0:
		return "no expiry (set outside redisync)"
	case ms == 0:
		return "expired"
	}
	return durationMS(ms) + " left"
}

// queued tells how many wait in a FairMutex's, Semaphore's or Mutex's queue.
func queued(info *lockInfo) string {
	n := int64(len(info.Waiters))
	if n == 0 {
		return ""
	}
	if info.Kind == kindSemaphore {
		return fmt.Sprintf("; %d %s queued", n, plural(n, "request", "requests"))
	}
	return fmt.Sprintf("; %d %s queued", n, plural(n, "waiter", "waiters"))
}

// lockFlags are the flags of a command on one lock: where it is (the
// connection flags, or --quorum) and which of the primitives stored under
// its name (--kind).
type lockFlags struct {
	conn   connFlags
	quorum quorumURLs
	kind   *string
}

// register adds the flags to fs.
func (lf *lockFlags) register(fs *flag.FlagSet) {
	lf.conn.register(fs)
	registerQuorum(fs, &lf.quorum)
	lf.kind = kindFlag(fs)
}

// kindFlag registers --kind, which chooses among primitives stored under
// one name.
func kindFlag(fs *flag.FlagSet) *string {
	return fs.String("kind", "", "when several primitives are stored under NAME, the one to use: `KIND` is "+strings.Join(lockKinds(), ", "))
}

// checkKind validates a --kind value.
func checkKind(kind string) error {
	if kind == "" {
		return nil
	}
	for _, k := range lockKinds() {
		if strings.EqualFold(k, kind) {
			return nil
		}
	}
	return usagef("unknown --kind %q: want one of %s", kind, strings.Join(lockKinds(), ", "))
}

// lockKinds are the kinds --kind accepts.
func lockKinds() []string {
	var ks []string
	for _, l := range detectors {
		if l.kind != kindFence {
			ks = append(ks, string(l.kind))
		}
	}
	return ks
}
