// Package scripts holds every Lua script of redisync and is the only package
// that sends EVAL or EVALSHA.
//
// Each script lives in its own .lua file whose header states its contract
// (KEYS, ARGV, reply). Calls go out as EVALSHA; a node that answers NOSCRIPT
// (first use, restart, failover, SCRIPT FLUSH) gets the same call again as EVAL,
// which also loads the script there. That works for single calls and batches.
package scripts

import (
	"context"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

//go:embed *.lua
var files embed.FS

//go:generate go test -run ^TestDigests$ -digests.update .

// A Script is one Lua script with its SHA1 digest, written in digests.go
// when the script was (go generate).
type Script struct {
	Name   string // the file name without ".lua"
	Source string // the Lua text, sent by EVAL: its libraries', then its own
	SHA1   string // its digest, sent by EVALSHA
	// libs name the libraries whose texts open Source, in order, and
	// libLines how many lines each takes there.
	libs     []string
	libLines []int
}

// The scripts. Their contracts are in the header of each .lua file.
var (
	MutexAcquire     = load("mutex_acquire")
	MutexWait        = loadWith("mutex_wait", "queue_lib")
	MutexRelease     = loadWith("mutex_release", "hold_lib", "queue_lib")
	MutexRenew       = load("mutex_renew")
	MutexForceUnlock = load("mutex_force_unlock")
	FencedAcquire    = load("fenced_acquire")
	FenceSet         = load("fence_set")
	RWReadLock       = loadWith("rw_rlock", "keys_lib")
	RWReadUnlock     = loadWith("rw_runlock", "hold_lib", "keys_lib")
	RWWriteLock      = load("rw_lock")
	RWWriteUnlock    = loadWith("rw_unlock", "hold_lib")
	RWRenew          = loadWith("rw_renew", "keys_lib")
	RWWriterLeave    = load("rw_writer_leave")
)

// all is every script loaded, in order (see TestDigests).
var all []*Script

// load reads the script name.lua.
func load(name string) *Script { return loadWith(name) }

// key names a script with the libraries before it: its entry in digests.
func (s *Script) key() string { return strings.Join(append([]string{s.Name}, s.libs...), "+") }

// loadWith reads the script name.lua with the texts of the libraries libs
// (lib.lua each) before it: the local functions that a family of scripts
// shares.
func loadWith(name string, libs ...string) *Script {
	s := &Script{Name: name, libs: libs}
	for _, lib := range libs {
		text := read(lib)
		s.Source += text
		s.libLines = append(s.libLines, strings.Count(text, "\n"))
	}
	s.Source += read(name)
	// The digest was computed when the scripts were written (digests.go,
	// go generate): SHA-1 is not for computing here, where a FIPS 140-3
	// build (GODEBUG=fips140=only) refuses it. TestDigests checks each one.
	s.SHA1 = digests[s.key()]
	all = append(all, s)
	return s
}

func read(name string) string {
	src, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic("scripts: " + err.Error())
	}
	return string(src)
}

// A Call is one execution of a script.
type Call struct {
	Script *Script  // what to run
	Keys   []string // KEYS: every key the script touches, all in one slot
	Args   []string // ARGV
	// Retryable lets rueidis resend the call after a connection error. Only
	// calls whose repetition is harmless (idempotent ones) may set it.
	Retryable bool
}

// Runner runs scripts on one rueidis client. It is the script registry that
// one redisync Client shares across all of its handles.
type Runner struct {
	rc      rueidis.Client
	publish string        // "publish", or "spublish" on a cluster
	counts  replicaCounts // see Sync
}

// NewRunner returns a Runner that sends its calls through rc. With sharded
// set (on a cluster) the scripts publish with SPUBLISH, else with PUBLISH.
func NewRunner(rc rueidis.Client, sharded bool) *Runner {
	r := &Runner{rc: rc, publish: "publish"}
	if sharded {
		r.publish = "spublish"
	}
	return r
}

// TransientRetry bounds how long Exec keeps resending a call that a node
// refused for now: a failover in progress (READONLY, MASTERDOWN), a slot
// being migrated (TRYAGAIN), a cluster or a server not ready (CLUSTERDOWN,
// LOADING), a busy script (BUSY), a second redirection of a call with WAIT
// (MOVED, ASK; see sameNode). Such a refusal means the call did not run,
// so sending it again is safe whatever the call does.
const TransientRetry = 2 * time.Second

// Exec runs one call: EVALSHA, then EVAL when the node does not know the
// script, followed by WAIT when ctx carries a Sync (see WithSync). A
// transient refusal is retried with backoff for up to TransientRetry (or
// until ctx ends).
func (r *Runner) Exec(ctx context.Context, call Call) rueidis.RedisResult {
	var deadline time.Time
	s, _ := ctx.Value(syncKey{}).(*Sync)
	for attempt := 1; ; attempt++ {
		var res rueidis.RedisResult
		if s != nil {
			res = r.execSync(ctx, call, s)
		} else if res = r.rc.Do(ctx, r.command(call, true)); isNoScript(res.Error()) {
			res = r.rc.Do(ctx, r.command(call, false))
		}
		if !Transient(res.Error()) {
			return res
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(TransientRetry)
		}
		wait := min(time.Duration(attempt)*5*time.Millisecond, 100*time.Millisecond)
		if time.Now().Add(wait).After(deadline) {
			return res
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return res
		}
	}
}

// Transient reports whether err is a node's refusal to run a call for now,
// which means the call did not run (see TransientRetry).
func Transient(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	if !ok {
		return false
	}
	if addr, _ := redirection(err); addr != "" {
		return true
	}
	msg := re.Error()
	return re.IsTryAgain() || re.IsLoading() || re.IsClusterDown() ||
		strings.HasPrefix(msg, "READONLY") || strings.HasPrefix(msg, "MASTERDOWN") || strings.HasPrefix(msg, "BUSY ")
}

// ExecMulti runs calls pipelined together (rueidis splits them per node on a
// cluster) and returns one result per call, in order. Calls answered NOSCRIPT
// are sent again, together, as EVAL.
func (r *Runner) ExecMulti(ctx context.Context, calls []Call) []rueidis.RedisResult {
	if len(calls) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = r.command(call, true)
	}
	results := r.rc.DoMulti(ctx, cmds...)
	var retry []int
	for i, res := range results {
		if isNoScript(res.Error()) {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return results
	}
	cmds = cmds[:0]
	for _, i := range retry {
		cmds = append(cmds, r.command(calls[i], false))
	}
	for j, res := range r.rc.DoMulti(ctx, cmds...) {
		results[retry[j]] = res
	}
	return results
}

func (r *Runner) command(call Call, sha bool) rueidis.Completed {
	var cmd rueidis.Completed
	n := int64(len(call.Keys))
	if sha {
		cmd = r.rc.B().Evalsha().Sha1(call.Script.SHA1).Numkeys(n).Key(call.Keys...).Arg(call.Args...).Build()
	} else {
		cmd = r.rc.B().Eval().Script(call.Script.Source).Numkeys(n).Key(call.Keys...).Arg(call.Args...).Build()
	}
	if call.Retryable {
		cmd = cmd.ToRetryable()
	}
	return cmd
}

// explain returns err, an error reply of call, with the script's name and the
// line of its source that raised it when it was raised inside the script: a
// refusal there (a command or key the ACL user may not use, a key of another
// type) names the line ("@user_script:40"), not the command, and the source
// line does.
func (call Call) explain(err error) error {
	if err == nil || rueidis.IsRedisNil(err) {
		return err
	}
	msg := err.Error()
	i := strings.Index(msg, "@user_script:")
	if i < 0 {
		return err
	}
	digits := msg[i+len("@user_script:"):]
	digits = digits[:len(digits)-len(strings.TrimLeft(digits, "0123456789"))]
	n, _ := strconv.Atoi(digits)
	lines := strings.Split(call.Script.Source, "\n")
	if n < 1 || n > len(lines) {
		return err
	}
	text := strings.TrimSpace(lines[n-1])
	where := call.Script.Name + ".lua"
	for i, lines := range call.Script.libLines {
		if n <= lines {
			return fmt.Errorf("%s, in %s.lua line %d `%s`: %w", where, call.Script.libs[i], n, text, err) // a library's
		}
		n -= lines
	}
	return fmt.Errorf("%s line %d `%s`: %w", where, n, text, err)
}

// IsNoScript reports whether err is a node's NOSCRIPT answer: the call did
// not run.
func IsNoScript(err error) bool { return isNoScript(err) }

func isNoScript(err error) bool {
	re, ok := rueidis.IsRedisErr(err)
	return ok && re.IsNoScript()
}
