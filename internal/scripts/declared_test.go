package scripts

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every key a script reads or writes arrives in KEYS, as Redis asks of a
// script: a name built inside the script (a prefix from KEYS and a field
// from ARGV joined with '..') is a key that the server, a cluster's routing
// and an ACL see nowhere before the script runs. The test reads each script
// (its libraries first, as loadWith puts them) and fails on any redis.call
// or redis.pcall whose key argument is not KEYS[<expr>], or a name only ever
// given KEYS entries: by local, by assignment, as the loop variable of
// ipairs(KEYS), or as a function's parameter at every call of the function.
//
// What is no key is not checked. The channel of PUBLISH and SPUBLISH is
// none (Redis' key specs mark SPUBLISH's channel NOT_KEY), so a script may
// build a channel's name, as rfair_acquire and rfair_lib do for a Redisson
// waiter's channel (channel .. ':' .. head); the command itself comes from
// ARGV (publish or spublish) and has no key argument. Values built with
// '..' (sem_acquire's entry "<permits>:<version>") are no keys either.
//
// No script opens with a "#!lua flags=..." line (TestHeadersNameTheirKeys
// checks): none needs a flag, and the line is no mere annotation. From it
// on Redis 7 runs the script by the flags it names (without
// allow-cross-slot-keys, none of its commands may touch keys of another
// slot than the others'), refuses a flag it does not know, and a server
// before 7.0 refuses the script: its Lua does not read "#!".

// keyArgs says which arguments of each command the scripts send are keys.
// A command missing here fails the test: add it with its keys, as COMMAND
// DOCS or the command's key specs give them.
var keyArgs = map[string]keyArg{
	"time": noKey,
	"del":  allKeys, "exists": allKeys,
	"get": firstKey, "set": firstKey, "incrby": firstKey, "decrby": firstKey, "pexpire": firstKey, "pttl": firstKey,
	"hget": firstKey, "hset": firstKey, "hsetnx": firstKey, "hdel": firstKey, "hexists": firstKey, "hkeys": firstKey,
	"hvals": firstKey, "hlen": firstKey, "hmget": firstKey, "hincrby": firstKey,
	"zadd": firstKey, "zrem": firstKey, "zrange": firstKey, "zrangebyscore": firstKey, "zremrangebyscore": firstKey,
	"zscore": firstKey, "zrank": firstKey, "zcard": firstKey, "zincrby": firstKey,
	"lindex": firstKey, "lpop": firstKey, "lpos": firstKey, "lrange": firstKey, "lrem": firstKey, "rpush": firstKey,
	"publish": noKey, "spublish": noKey, // the channel is no key
}

type keyArg uint8

const (
	noKey    keyArg = iota
	firstKey        // the argument after the command's name
	allKeys         // every argument
)

// keyProblems returns what is wrong with the keys of the calls in src, each
// with its line in src.
func keyProblems(src string) ([]string, error) {
	prog, err := parseLua(src)
	if err != nil {
		return nil, err
	}
	fromKeys := boundTo(prog, exKeys)
	fromArgv := boundTo(prog, exArgv)
	var problems []string
	report := func(c *luaExpr, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s: %s", c.line, c.text, fmt.Sprintf(format, args...)))
	}
	for _, c := range prog.calls {
		if c.name != "redis.call" && c.name != "redis.pcall" {
			continue
		}
		if len(c.args) == 0 {
			report(c, "no command")
			continue
		}
		cmd := c.args[0]
		var spec keyArg
		switch {
		case cmd.kind == exString:
			var known bool
			if spec, known = keyArgs[strings.ToLower(cmd.str)]; !known {
				report(c, "command %q is not in keyArgs: add it with the positions of its keys", cmd.str)
				continue
			}
		case cmd.kind == exArgv, cmd.kind == exName && fromArgv[cmd.name]:
			spec = noKey // the publish command, "publish" or "spublish", from ARGV
		default:
			report(c, "the command %s is neither a literal nor taken from ARGV", cmd.text)
			continue
		}
		for i, arg := range c.args[1:] {
			if spec == noKey || spec == firstKey && i > 0 {
				break
			}
			if arg.kind != exKeys && !(arg.kind == exName && fromKeys[arg.name]) {
				report(c, "key argument `%s` is not a KEYS entry", arg.text)
			}
		}
	}
	return problems, nil
}

// boundTo returns the names that are given only values of kind (KEYS or ARGV
// entries) or of names in the set: the largest such set, so that names that
// pass values around (a local given to a function whose parameter has the
// same name) are in it, and a name given anything else anywhere is not. A
// name given nothing is not in it, unless it is a parameter of a function
// never called.
func boundTo(prog *luaProgram, kind exprKind) map[string]bool {
	in := map[string]bool{}
	for name, values := range prog.bindings {
		in[name] = len(values) > 0
	}
	for _, params := range prog.params {
		for _, param := range params {
			if _, given := prog.bindings[param]; !given {
				in[param] = true
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for name, values := range prog.bindings {
			if !in[name] {
				continue
			}
			for _, v := range values {
				if v.kind != kind && !(v.kind == exName && in[v.name]) {
					in[name], changed = false, true
					break
				}
			}
		}
	}
	return in
}

// where names line n of s's source: its file and the line there.
func (s *Script) where(n int) string {
	for i, lines := range s.libLines {
		if n <= lines {
			return fmt.Sprintf("%s.lua:%d", s.libs[i], n)
		}
		n -= lines
	}
	return fmt.Sprintf("%s.lua:%d", s.Name, n)
}

var problemLine = regexp.MustCompile(`^line (\d+): `)

func TestScriptKeysDeclared(t *testing.T) {
	for _, s := range all {
		problems, err := keyProblems(s.Source)
		if err != nil {
			t.Errorf("%s: %v", s.key(), err)
			continue
		}
		for _, p := range problems {
			m := problemLine.FindStringSubmatch(p)
			n, _ := strconv.Atoi(m[1])
			t.Errorf("%s: %s (in %s)", s.where(n), p[len(m[0]):], s.Name)
		}
	}
}

// Every .lua file is a script or a library of one, so the test above reads
// each of them.
func TestEveryLuaFileIsChecked(t *testing.T) {
	loaded := map[string]bool{}
	for _, s := range all {
		loaded[s.Name] = true
		for _, lib := range s.libs {
			loaded[lib] = true
		}
	}
	names, err := fs.Glob(files, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range names {
		if !loaded[strings.TrimSuffix(f, ".lua")] {
			t.Errorf("%s is loaded by no script, so no test reads it", f)
		}
	}
}

// The check catches a key built in a script: in place, through a local, or
// through a function's parameter; and a command it does not know.
func TestKeyProblemsCatchBuiltKeys(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"concatenated", "return redis.call('get', KEYS[1] .. ':' .. ARGV[1])", "`KEYS[1] .. ':' .. ARGV[1]` is not a KEYS entry"},
		{"local", "local latch = KEYS[2] .. ':' .. ARGV[1]\nreturn redis.call('exists', KEYS[1], latch)", "`latch` is not a KEYS entry"},
		{"reassigned", "local k = KEYS[1]\nif ARGV[1] then k = ARGV[1] end\nreturn redis.call('get', k)", "`k` is not a KEYS entry"},
		{"parameter", "local function f(key) return redis.call('pttl', key) end\nf(KEYS[1])\nreturn f(KEYS[1] .. ':1')", "`key` is not a KEYS entry"},
		{"function value", "local function f(key) return redis.call('pttl', key) end\nf(KEYS[1])\nreturn pcall(f, ARGV[1])", "`key` is not a KEYS entry"},
		{"second key", "return redis.call('del', KEYS[1], ARGV[1])", "`ARGV[1]` is not a KEYS entry"},
		{"unknown command", "return redis.call('rename', KEYS[1], KEYS[2])", `command "rename" is not in keyArgs`},
		{"loop", "for _, k in ipairs(redis.call('keys', '*')) do redis.call('del', k) end", `command "keys" is not in keyArgs`},
		{"command from a value", "local cmd = ARGV[1] .. 'x'\nredis.call(cmd, KEYS[1])", "neither a literal nor taken from ARGV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems, err := keyProblems(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems %q, want one with %q", problems, tc.want)
			}
		})
	}
	for _, src := range []string{
		"local a, b = KEYS[1], KEYS[2]\nlocal c = a\nreturn redis.call('del', a, b, c)",
		"for i, key in ipairs(KEYS) do redis.call('pexpire', key, ARGV[i]) end",
		"local function f(key, publish) redis.call(publish, 'ch:' .. ARGV[2], '1') return redis.call('get', key) end\nreturn f(KEYS[3], ARGV[1])",
	} {
		if problems, err := keyProblems(src); err != nil || len(problems) > 0 {
			t.Errorf("%q: problems %q, %v; want none", src, problems, err)
		}
	}
	if _, err := keyProblems("local get = redis.call\nreturn get('get', KEYS[1])"); err == nil {
		t.Error("redis.call used as a value was not refused")
	}
}

var headerKeys = regexp.MustCompile(`KEYS\[(\d+)(\.\.\.?)?(\d+)?\]|KEYS\[[^\]]*[a-z][^\]]*\]`)

// Each script's header states its contract: every KEYS[n] the script's text
// uses is among the keys it names (KEYS[n], a range KEYS[a..b], KEYS[a...],
// or a form per entry such as KEYS[2i-1]).
func TestHeadersNameTheirKeys(t *testing.T) {
	for _, s := range all {
		src := read(s.Name)
		if strings.HasPrefix(src, "#!") {
			t.Errorf("%s.lua opens with %q: no script needs a flag (see the top of this file)", s.Name, strings.SplitN(src, "\n", 2)[0])
		}
		var header strings.Builder
		for line := range strings.Lines(src) {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line)
		}
		covered := func(n int) bool {
			for _, m := range headerKeys.FindAllStringSubmatch(header.String(), -1) {
				first, _ := strconv.Atoi(m[1])
				last, _ := strconv.Atoi(m[3])
				switch {
				case m[1] == "": // a form per entry
					return true
				case m[2] == "...":
					if n >= first {
						return true
					}
				case m[2] == "..":
					if n >= first && n <= last {
						return true
					}
				case n == first:
					return true
				}
			}
			return false
		}
		toks, err := lexLua(src)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		for i := 0; i+3 < len(toks); i++ {
			if toks[i].text != "KEYS" || toks[i+1].text != "[" || toks[i+2].kind != tokNumber || toks[i+3].text != "]" {
				continue
			}
			if n, _ := strconv.Atoi(toks[i+2].text); !covered(n) {
				t.Errorf("%s.lua:%d uses KEYS[%d], which its header does not name", s.Name, toks[i].line, n)
			}
		}
	}
}
