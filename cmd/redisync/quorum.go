package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
)

// quorumURLs is the repeatable --quorum flag: the deployments of a quorum
// (redisync.NewQuorum), one URL each.
type quorumURLs []string

func (q *quorumURLs) String() string { return strings.Join(*q, " ") }

func (q *quorumURLs) Set(v string) error {
	*q = append(*q, v)
	return nil
}

// registerQuorum adds --quorum to fs.
func registerQuorum(fs *flag.FlagSet, q *quorumURLs) {
	fs.Var(q, "quorum", "a deployment `URL` of a quorum (redisync.NewQuorum), given once for each (an odd number, at least 3); the lock is looked for on every one, instead of on --redis")
}

// connectQuorum opens a client of each deployment of q, with the TLS flags
// of cf; every one must answer.
func connectQuorum(ctx context.Context, cf *connFlags, q quorumURLs) ([]rueidis.Client, error) {
	if n := len(q); n < 3 || n%2 == 0 {
		return nil, usagef("--quorum wants an odd number of deployments, at least 3; got %d", n)
	}
	if cf.given() || cf.cluster || cf.sentinelMaster != "" {
		return nil, usagef("--quorum names the deployments: without --redis, --cluster or --sentinel-master")
	}
	var rcs []rueidis.Client
	for _, url := range q {
		one := *cf
		one.url = url
		rc, err := one.connect(ctx)
		if err != nil {
			closeAll(rcs)
			return nil, err
		}
		rcs = append(rcs, rc)
	}
	return rcs, nil
}

func closeAll(rcs []rueidis.Client) {
	for _, rc := range rcs {
		rc.Close()
	}
}

// A quorumView is a lock as each deployment of a quorum has it.
type quorumView struct {
	Name     string       `json:"name"`
	Majority int          `json:"majority"`
	Servers  []serverView `json:"servers"`
	Holders  []quorumHold `json:"holders"` // each hold, with the deployments that have it
	Kinds    []lockKind   `json:"-"`
	infos    []*lockInfo  // by server, nil where the lock has no keys
	errs     []error      // by server
}

// A serverView is one deployment's view of the lock.
type serverView struct {
	URL   string    `json:"url"`
	Info  *lockInfo `json:"info,omitempty"`
	Error string    `json:"error,omitempty"`
}

// A quorumHold is one hold and the deployments that have it.
type quorumHold struct {
	Client     string   `json:"client"`
	ClientName string   `json:"client_name,omitempty"` // as a holder's
	Owner      string   `json:"owner"`
	On         []string `json:"on"`
	Held       bool     `json:"held"` // on a majority
}

// inspectQuorum reads the lock name on every deployment of rcs.
func inspectQuorum(ctx context.Context, rcs []rueidis.Client, urls quorumURLs, name, kind string) *quorumView {
	v := &quorumView{Name: name, Majority: len(rcs)/2 + 1, infos: make([]*lockInfo, len(rcs)), errs: make([]error, len(rcs))}
	for i, rc := range rcs {
		info, err := detect(ctx, rc, name, kind)
		sv := serverView{URL: redactURL(urls[i])}
		switch {
		case errors.Is(err, errNotFound):
		case err != nil:
			sv.Error, v.errs[i] = err.Error(), err
		default:
			sv.Info, v.infos[i] = info, info
			if !slices.Contains(v.Kinds, info.Kind) {
				v.Kinds = append(v.Kinds, info.Kind)
			}
			for _, h := range info.Holders {
				j := slices.IndexFunc(v.Holders, func(q quorumHold) bool { return q.Client == h.Client && q.Owner == h.Owner })
				if j < 0 {
					v.Holders = append(v.Holders, quorumHold{Client: h.Client, ClientName: h.ClientName, Owner: h.Owner})
					j = len(v.Holders) - 1
				}
				v.Holders[j].On = append(v.Holders[j].On, sv.URL)
			}
		}
		v.Servers = append(v.Servers, sv)
	}
	for i := range v.Holders {
		v.Holders[i].Held = len(v.Holders[i].On) >= v.Majority
	}
	return v
}

// print writes v as text: the holds and where they are, then each
// deployment's view.
func (v *quorumView) print(w io.Writer) {
	fmt.Fprintf(w, "quorum lock %q on %d deployments (a majority is %d)\n", v.Name, len(v.Servers), v.Majority)
	if len(v.Holders) == 0 {
		fmt.Fprintln(w, "  not held on any deployment")
	}
	for _, h := range v.Holders {
		state := "held"
		if !h.Held {
			state = "NOT held (fewer than a majority: a hold being taken, given back, or lost)"
		}
		fmt.Fprintf(w, "  %s:%s on %d of %d: %s; %s\n", shownClient(h.Client, h.ClientName), h.Owner, len(h.On), len(v.Servers), strings.Join(h.On, ", "), state)
	}
	for i, s := range v.Servers {
		fmt.Fprintf(w, "\n%s:\n", s.URL)
		switch {
		case v.errs[i] != nil:
			fmt.Fprintf(w, "  error: %v\n", v.errs[i])
		case v.infos[i] == nil:
			fmt.Fprintln(w, "  no keys of the lock")
		default:
			var b strings.Builder
			printInfo(&b, v.infos[i])
			fmt.Fprintln(w, indent(strings.TrimSuffix(b.String(), "\n")))
		}
	}
}

// runInspectQuorum is "redisync inspect --quorum URL ... NAME".
func runInspectQuorum(ctx context.Context, std *stdio, cf *connFlags, urls quorumURLs, name, kind string, asJSON bool) error {
	rcs, err := connectQuorum(ctx, cf, urls)
	if err != nil {
		return err
	}
	defer closeAll(rcs)
	v := inspectQuorum(ctx, rcs, urls, name, kind)
	if asJSON {
		enc := json.NewEncoder(std.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	v.print(std.out)
	return nil
}

// runUnlockQuorum is "redisync unlock --force --quorum URL ... NAME": it
// force-unlocks a Mutex or a FencedMutex on every deployment, through a
// quorum Client of the library.
func runUnlockQuorum(ctx context.Context, std *stdio, cf *connFlags, urls quorumURLs, name, kind string, yes bool) error {
	rcs, err := connectQuorum(ctx, cf, urls)
	if err != nil {
		return err
	}
	defer closeAll(rcs)
	v := inspectQuorum(ctx, rcs, urls, name, kind)
	for _, k := range v.Kinds {
		if k != kindMutex && k != kindFencedMutex {
			return fmt.Errorf("force unlock on a quorum is for a Mutex or a FencedMutex; %q is a %s on some deployment", name, k)
		}
	}
	v.print(std.out)
	if len(v.Holders) == 0 {
		fmt.Fprintf(std.out, "%q is not locked on any deployment; nothing to unlock\n", name)
		return nil
	}
	if !yes && !confirm(std, fmt.Sprintf("Force-unlock %q on every deployment? Its holders lose it. [y/N] ", name)) {
		return errDeclined
	}
	c, err := redisync.NewQuorum(rcs, redisync.WithLogger(slog.New(slog.NewTextHandler(std.err, nil))))
	if err != nil {
		return err
	}
	defer c.Close()
	unlocked, err := c.NewMutex(name).ForceUnlock(ctx) // a FencedMutex's hold is in the same hash; its counter stays
	if err != nil {
		return err
	}
	if !unlocked {
		fmt.Fprintf(std.out, "%q was released meanwhile; nothing to do\n", name)
		return nil
	}
	fmt.Fprintf(std.out, "unlocked %q on every deployment that answered; its waiters were woken\n", name)
	return nil
}
