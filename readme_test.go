package redisync_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeImports are the packages the README's Go blocks may use, and
// readmePrelude what the blocks may take as given: the caller's ctx, a
// Client c, a test's t, three rueidis clients for the quorum, and the
// service's own functions.
var readmeImports = []string{"context", "testing", "time",
	"github.com/redis/rueidis", "github.com/go-redisync/redisync", "github.com/go-redisync/redisync/redisynctest"}

const readmePrelude = `package readme

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/go-redisync/redisync"
	"github.com/go-redisync/redisync/redisynctest"
)

var (
	ctx           context.Context
	c             *redisync.Client
	t             *testing.T
	rc1, rc2, rc3 rueidis.Client

	_ = time.Second
	_ = redisynctest.New
)

func charge(context.Context, string) error { return nil }
func migrate(context.Context) error        { return nil }
func lead(context.Context) error           { return nil }
`

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestReadmeCompiles type-checks every Go block of README.md as the body of
// a function returning an error, against the packages as built: a README
// that names a call, an argument or a result the API does not have fails
// here, and so does one that declares what it does not use.
func TestReadmeCompiles(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := goBlock.FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks, "README.md has no Go block")
	require.LessOrEqual(t, strings.Count(string(readme), "\n"), 200, "README.md is over 200 lines")

	var src strings.Builder
	src.WriteString(readmePrelude)
	lines := map[int]int{} // the source's first line of each block, by block
	for i, b := range blocks {
		fmt.Fprintf(&src, "\nfunc block%d() error {\n", i)
		lines[i] = strings.Count(src.String(), "\n") + 1
		src.WriteString(b[1])
		src.WriteString("return nil\n}\n")
	}

	exports := exportData(t, readmeImports)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "readme.go", src.String(), 0)
	require.NoError(t, err, "a Go block of README.md does not parse")
	var problems []string
	conf := types.Config{
		Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exports[path]
			if !ok {
				return nil, fmt.Errorf("no export data for %q", path)
			}
			return os.Open(file)
		}),
		Error: func(err error) { problems = append(problems, err.Error()) },
	}
	_, _ = conf.Check("readme", fset, []*ast.File{f}, nil)
	if len(problems) > 0 {
		t.Errorf("README.md's Go blocks do not compile:\n%s\n\nas type-checked (blocks from line %v):\n%s",
			strings.Join(problems, "\n"), lines, src.String())
	}
}

// exportData returns the export data files of pkgs and of every package they
// import, built by the go command.
func exportData(t *testing.T, pkgs []string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}"}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go list: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, _ := strings.Cut(strings.TrimSpace(line), "=")
		if file != "" {
			exports[path] = file
		}
	}
	return exports
}
