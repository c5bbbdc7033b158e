package redisync_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// engineLayers are the engine's files from the top down: each may refer
// only to the ones below it (and to files outside the list that do not
// refer back, such as errors.go and options.go).
var engineLayers = []string{
	"wait.go",            // the wait loop, and the way of waiting it takes
	"waiting_redis.go",   // a Mutex's way: in line, the first in line also queued in Redis
	"waiting_ticket.go",  // a FairMutex's and a Semaphore's way: queued in Redis with a ticket
	"waiting_line.go",    // waiting in the Client's line of the lock
	"waiting_channel.go", // waiting on the lock's channel alone
	"waiting.go",         // what a way of waiting is, and what a wait waits for
	"receive.go",         // a waiting call's side of the handovers: queue in Redis, take or adopt a handed hold
	"attempt.go",         // one attempt (the fast path's, a Try's): acquire, adopt what an earlier one took, record the hold
	"leave.go",           // a call that gives up: its place, its field, a hold handed to it
	"release.go",         // the release, and the handover it may make instead
	"engine.go",          // what a Client's calls share
	"handover.go",        // the Client's queues of waiting calls and the holds on their way
	"protocol.go",        // protocol, call, attempt, place
	"hold.go",            // the hold table
	"term.go",            // one hold from its acquire to its end
}

// The package's files (tests aside) reference each other without cycles,
// and the engine's files only downwards: a file that refers to a name
// declared in another (a type, a function, a method, a field) depends on
// it.
func TestFileReferencesHaveNoCycle(t *testing.T) {
	deps, all := fileDeps(t, ".")
	for _, c := range stronglyConnected(all, deps) {
		t.Errorf("files that reference each other in a cycle: %s", strings.Join(c, " "))
	}
	for i, f := range engineLayers {
		if !slices.Contains(all, f) {
			t.Errorf("engine layer %s: no such file", f)
		}
		for _, above := range engineLayers[:i] {
			if deps[f][above] {
				t.Errorf("%s refers to %s, a layer above it", f, above)
			}
		}
	}
}

// fileDeps type-checks the non-test files of the package in dir and
// returns, by file, the other files it refers to, and the files.
func fileDeps(t *testing.T, dir string) (map[string]map[string]bool, []string) {
	t.Helper()
	fset, files := parseBuildFiles(t, dir)
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", importData(t, dir))}
	pkg, err := conf.Check("redisync", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	fileOf := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	deps := map[string]map[string]bool{}
	refer := func(at token.Pos, obj types.Object) {
		from, to := fileOf(at), fileOf(obj.Pos())
		if obj.Pkg() != pkg || from == to {
			return
		}
		if deps[from] == nil {
			deps[from] = map[string]bool{}
		}
		deps[from][to] = true
	}
	for id, obj := range info.Uses {
		if obj != nil {
			refer(id.Pos(), obj)
		}
	}
	for sel, s := range info.Selections {
		refer(sel.Pos(), s.Obj())
	}
	var all []string
	for _, f := range files {
		all = append(all, fileOf(f.Pos()))
	}
	return deps, all
}

// importData returns a lookup of the compiler's export data of the
// packages the package in dir imports, directly or not, as go list -export
// finds (and builds) them: type-checking the imports from source instead
// took 20 s under -race.
func importData(t *testing.T, dir string) func(path string) (io.ReadCloser, error) {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	files := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "\t")
		files[path] = file
	}
	return func(path string) (io.ReadCloser, error) {
		file := files[path]
		if file == "" {
			return nil, fmt.Errorf("go list -export gave no export data for %s", path)
		}
		return os.Open(file)
	}
}

// stronglyConnected returns the strongly connected sets of more than one
// node of the graph deps over nodes (Tarjan's algorithm), each sorted.
func stronglyConnected(nodes []string, deps map[string]map[string]bool) [][]string {
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for w := range deps[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var set []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			set = append(set, w)
			if w == v {
				break
			}
		}
		if len(set) > 1 {
			slices.Sort(set)
			out = append(out, set)
		}
	}
	slices.Sort(nodes)
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// The cycle finder finds a cycle, and only the cycle, of a small graph.
func TestStronglyConnected(t *testing.T) {
	deps := map[string]map[string]bool{
		"a": {"b": true}, "b": {"c": true}, "c": {"a": true, "d": true}, "d": {"e": true},
	}
	got := stronglyConnected([]string{"e", "d", "c", "b", "a"}, deps)
	if want := [][]string{{"a", "b", "c"}}; len(got) != 1 || !slices.Equal(got[0], want[0]) {
		t.Errorf("stronglyConnected = %v, want %v", got, want)
	}
}

// The broken variants of the chaos suite's self-test (internal/mutant) are
// built with the redisync_mutants tag only: no package of the module
// depends on the mutant package in a normal build, and with the tag the
// root package does (so that the check above cannot pass by a typo).
func TestNoMutantsInTheNormalBuild(t *testing.T) {
	deps := func(tags ...string) string {
		out, err := exec.Command("go", append(append([]string{"list", "-deps"}, tags...), "./...")...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		return string(out)
	}
	const mutant = "github.com/go-redisync/redisync/internal/mutant"
	if normal := deps(); strings.Contains(normal, mutant+"\n") {
		t.Errorf("a normal build depends on %s", mutant)
	}
	if tagged := deps("-tags", "redisync_mutants"); !strings.Contains(tagged, mutant+"\n") {
		t.Errorf("a build with the redisync_mutants tag does not depend on %s", mutant)
	}
}

// parseBuildFiles parses the non-test Go files of the package in dir that
// this build compiles.
func parseBuildFiles(t *testing.T, dir string) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		// The files of this build only (mutants_on.go and mutants_off.go
		// declare the same names under opposite build tags).
		if ok, err := build.Default.MatchFile(dir, filepath.Base(name)); err != nil || !ok {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return fset, files
}
