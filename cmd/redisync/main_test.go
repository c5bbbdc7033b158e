package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/internal/layout"
	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

// The test server, and the command built once for all tests.
var (
	target *redisserver.Target
	binDir string
	bin    string
)

func TestMain(m *testing.M) {
	os.Exit(redistest.Run(m,
		func() (err error) {
			if binDir, err = os.MkdirTemp("", "redisync-cmd-"); err != nil {
				return err
			}
			bin = filepath.Join(binDir, "redisync")
			if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
				return fmt.Errorf("go build: %v\n%s", err, out)
			}
			target, err = redisserver.StartStandalone()
			return err
		},
		func() {
			if target != nil {
				_ = target.Stop()
			}
			_ = os.RemoveAll(binDir)
		}))
}

// serverURL is the test server's URL for --redis.
func serverURL() string {
	u := "redis://" + target.Addrs[0]
	if target.Mini != nil {
		u += "?protocol=2" // miniredis serves Pub/Sub on a shared client only in RESP2
	}
	return u
}

// result is what one run of the command did.
type result struct {
	stdout, stderr string
	code           int
}

// runCmd runs the built command with args, stdin as its input and env added
// to a copy of the environment without REDIS_URL.
func runCmd(t *testing.T, stdin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	t.Logf("redisync %s -> exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// cleanEnv is the environment without REDIS_URL, so a developer's setting
// cannot redirect the tests.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") {
			env = append(env, kv)
		}
	}
	return env
}

// newLibClient returns a redisync Client on the test server, closed when the
// test ends, and its rueidis client.
func newLibClient(t *testing.T, opts ...redisync.Option) (*redisync.Client, rueidis.Client) {
	t.Helper()
	return libClientOn(t, target, opts...)
}

// libClientOn returns a redisync Client on tg, closed when the test ends,
// and its rueidis client.
func libClientOn(t *testing.T, tg *redisserver.Target, opts ...redisync.Option) (*redisync.Client, rueidis.Client) {
	t.Helper()
	rc, err := tg.NewClient()
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	quiet := redisync.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	c, err := redisync.New(rc, append([]redisync.Option{quiet}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, rc
}

func TestDemoAgainstServer(t *testing.T) {
	t.Parallel()
	r := runCmd(t, "", nil, "demo", "--redis", serverURL())
	require.Equal(t, 0, r.code, r.stderr)
	checkDemo(t, r.stdout)
}

func TestDemoEmbeddedServer(t *testing.T) {
	t.Parallel()
	if _, err := redisserver.ServerBinary(); err != nil {
		t.Skip(err)
	}
	r := runCmd(t, "", nil, "demo")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "started embedded redis-server on 127.0.0.1:")
	checkDemo(t, r.stdout)
}

func TestDemoEmbeddedMiniredis(t *testing.T) {
	t.Parallel()
	r := runCmd(t, "", []string{"REDIS_SERVER_BIN=/nonexistent", "REDISYNC_REQUIRE_SERVER="}, "demo")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "started embedded miniredis on 127.0.0.1:")
	checkDemo(t, r.stdout)
}

// checkDemo checks a demo's output: both scenes ran to the end, the kill and
// the takeover were shown, and never more than one holder was seen.
func checkDemo(t *testing.T, out string) {
	t.Helper()
	require.Contains(t, out, "most holders seen at once: 1 ")
	checkQueuedScenes(t, out)
	require.Contains(t, out, "w1 killed with SIGKILL while holding")
	require.Regexp(t, `w[23] acquired  took over [0-9.]+m?s after the kill`, out)
	// Summary rows: 4 workers x 5 rounds; then the victim's one hold and
	// 2 workers x 3 rounds: workers, acquisitions, most holders.
	require.Regexp(t, `(?m)^  1 Mutex: four worker processes contend for one lock\n      4 workers, 20 acquisitions, at most 1 inside \(1 allowed\),\n      handover p50 `, out)
	require.Regexp(t, `(?m)^  2 Mutex: the holder is killed with SIGKILL\n      3 workers, 7 acquisitions, at most 1 inside \(1 allowed\),\n`, out)
	require.Regexp(t, `(?m)^  2 Mutex: the holder is killed with SIGKILL\n(?s:.*?)takeover [0-9.]+m?s \(lease 1.5s\)$`, out)
	for _, l := range strings.Split(out[strings.Index(out, "summary"):], "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(l), 80, "the summary fits a terminal: %q", l)
	}
	checkFencedScene(t, out)
}

func TestBench(t *testing.T) {
	r := runCmd(t, "", nil, "bench", "--redis", serverURL(), "--ops", "60", "--concurrency", "3")
	require.Equal(t, 0, r.code, r.stderr)
	for _, row := range []string{`uncontended, serial +1 +1 `, `uncontended, parallel +1 +3 `, `contended, one name +4 +3 `} {
		require.Regexp(t, `(?m)^ *`+row+`+\d+ +[0-9.]+[µm]?s +[0-9.]+[µm]?s *$`, r.stdout)
	}
}

func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{name: "no command", args: nil, code: exitUsage, stderr: "Usage: redisync COMMAND"},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"inspect", "--frob", "x"}, code: exitUsage, stderr: "flag provided but not defined: -frob"},
		{name: "inspect without name", args: []string{"inspect", "--redis", serverURL()}, code: exitUsage, stderr: "want one lock NAME"},
		{name: "bad scheme", args: []string{"inspect", "--redis", "http://127.0.0.1:6379", "x"}, code: exitUsage, stderr: `bad Redis URL "http://127.0.0.1:6379": redis: invalid URL scheme: http`},
		{name: "bad db", args: []string{"inspect", "--redis", "redis://127.0.0.1:6379/zero", "x"}, code: exitUsage, stderr: `invalid database number: "zero"`},
		{name: "password hidden", args: []string{"inspect", "--redis", "ftp://u:secret@127.0.0.1:6379", "x"}, code: exitUsage, stderr: `"ftp://u:xxxxx@127.0.0.1:6379"`},
		{name: "unreachable", args: []string{"inspect", "--redis", "redis://127.0.0.1:1", "x"}, code: exitFail, stderr: "cannot connect to Redis at 127.0.0.1:1: "},
		{name: "unreachable watch", args: []string{"watch", "--redis", "redis://127.0.0.1:1"}, code: exitFail, stderr: "cannot connect to Redis at 127.0.0.1:1: "},
		{name: "unlock without force", args: []string{"unlock", "x"}, code: exitUsage, stderr: "unlock needs --force"},
		{name: "unlock bad name", args: []string{"unlock", "--force", "a{b"}, code: exitUsage, stderr: `invalid lock name "a{b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCmd(t, "", nil, tc.args...)
			require.Equal(t, tc.code, r.code)
			require.Contains(t, r.stderr, tc.stderr)
			require.NotContains(t, r.stderr, "secret")
		})
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"help", "-h", "--help"} {
		r := runCmd(t, "", nil, arg)
		require.Equal(t, 0, r.code)
		require.Contains(t, r.stdout, "Usage: redisync COMMAND")
		for _, c := range []string{"demo", "inspect", "unlock", "watch", "bench"} {
			require.Regexp(t, `(?m)^  `+c+` `, r.stdout)
		}
		require.NotContains(t, r.stdout, workerCommand)
	}
	r := runCmd(t, "", nil, "inspect", "-h")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.stderr, "Usage: redisync inspect [--json]")
}

func TestExpandHosts(t *testing.T) {
	for in, want := range map[string]string{
		"redis://h1:1":                      "redis://h1:1",
		"redis://u:p@h1:1,h2:2/3":           "redis://u:p@h1:1/3?addr=h2:2",
		"redis://h1:1,h2:2,h3:3?protocol=2": "redis://h1:1?protocol=2&addr=h2:2&addr=h3:3",
		"rediss://h1,h2":                    "rediss://h1?addr=h2",
	} {
		require.Equal(t, want, expandHosts(in), in)
	}
	opt, err := (&connFlags{url: "redis://h1:26379,h2:26380/2", sentinelMaster: "mymaster"}).options()
	require.NoError(t, err)
	require.Equal(t, []string{"h1:26379", "h2:26380"}, opt.InitAddress)
	require.Equal(t, "mymaster", opt.Sentinel.MasterSet)
	require.Equal(t, 2, opt.SelectDB)
	require.True(t, opt.DisableCache)
	require.False(t, opt.ForceSingleClient)

	// A bare address, as people type it: "first path segment in URL cannot
	// contain colon" before.
	opt, err = (&connFlags{url: "127.0.0.1:6379"}).options()
	require.NoError(t, err)
	require.Equal(t, []string{"127.0.0.1:6379"}, opt.InitAddress)
	opt, err = (&connFlags{url: "h1:26379,h2:26380", sentinelMaster: "mymaster"}).options()
	require.NoError(t, err)
	require.Equal(t, []string{"h1:26379", "h2:26380"}, opt.InitAddress)
}

func TestGlobMatcher(t *testing.T) {
	match, err := globMatcher(`order:*:[ab]?\*`)
	require.NoError(t, err)
	require.True(t, match("order:42:ax*"))
	require.False(t, match("order:42:cx*"))
	require.False(t, match("order:42:ax"))
	require.Equal(t, "x", nameFromAux("{x}"))
	require.Equal(t, "{t}:a", nameFromAux("{t}:a"))
}

// startWatch starts "redisync watch" on the test server with args and
// returns once it is watching: the command, its output lines after the
// "# watching" line, and its standard error.
func startWatch(t *testing.T, args ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"watch", "--redis", serverURL()}, args...)...)
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "# watching") {
		t.Log(lines.Text())
	}
	return cmd, lines, stderr
}

// shown is how the tools show c: its name, as a regular expression.
func shown(c *redisync.Client) string { return regexp.QuoteMeta(c.Name()) }

// nameOf is how the tools show the Client whose id is id: by the record it
// keeps on the test server.
func nameOf(t *testing.T, id string) string {
	t.Helper()
	rc, err := target.NewClient()
	require.NoError(t, err)
	defer rc.Close()
	v, err := rc.Do(context.Background(), rc.B().Get().Key(layout.ClientInfo(id)).Build()).ToString()
	require.NoError(t, err, "the record of Client %s", id)
	var rec clientRecord
	require.NoError(t, json.Unmarshal([]byte(v), &rec))
	return rec.String()
}
