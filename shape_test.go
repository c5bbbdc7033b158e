package redisync_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// The shape of the code a reader meets, read with go/ast from the files of
// the root package and of cmd/redisync (tests aside): each check holds a
// bound the code keeps, so that a change past it is a decision, not drift.

// maxFuncLines bounds a function's length, its signature and closing brace
// included.
const maxFuncLines = 50

// maxTerms bounds the terms of one condition (operands of && and ||).
const maxTerms = 3

// boolParams are the root's functions that still take a bool, each for a
// reason: a choice between two ways of doing something is a named type.
var boolParams = map[string]string{
	"subscribed":        "the subscriber's confirmation callback: the signature internal/notify calls",
	"tried":             "a TryLock's result passed on to be logged, not a choice",
	"WithShardedPubSub": "an option's on or off, as the user writes it",
	"wake":              "whether the release script freed the lock: its reply, not a choice",
}

// terms counts the operands of the && and || chain e.
func terms(e ast.Expr) int {
	switch x := e.(type) {
	case *ast.BinaryExpr:
		if x.Op == token.LAND || x.Op == token.LOR {
			return terms(x.X) + terms(x.Y)
		}
	case *ast.ParenExpr:
		return terms(x.X)
	}
	return 1
}

func TestTerms(t *testing.T) {
	for src, want := range map[string]int{
		"a":                       1,
		"a && b":                  2,
		"a && (b || c)":           3,
		"a && (b || c) && !(d)":   4,
		"f(a && b) || c":          2, // the call's argument is a condition of its own
		"(a || b) && (c || d)":    4,
		"a == b && c != d":        2,
		"x.y() && !z || w && v.u": 4,
	} {
		e, err := parser.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := terms(e); got != want {
			t.Errorf("terms(%s) = %d, want %d", src, got, want)
		}
	}
}

func TestFunctionsAreShort(t *testing.T) {
	for _, dir := range []string{".", "cmd/redisync"} {
		fset, files := parseBuildFiles(t, dir)
		for _, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok {
					continue
				}
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if lines > maxFuncLines {
					t.Errorf("%s: %s is %d lines long (at most %d)", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
				}
			}
		}
	}
}

func TestConditionsAreShort(t *testing.T) {
	fset, files := parseBuildFiles(t, ".")
	inner := map[ast.Expr]bool{} // the parts of a chain counted already
	var mark func(e ast.Expr)
	mark = func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				inner[x] = true
				mark(x.X)
				mark(x.Y)
			}
		case *ast.ParenExpr:
			mark(x.X)
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			x, ok := n.(*ast.BinaryExpr)
			if !ok || inner[x] || x.Op != token.LAND && x.Op != token.LOR {
				return true
			}
			if n := terms(x); n > maxTerms {
				t.Errorf("%s: a condition of %d terms (at most %d): name a part of it", fset.Position(x.Pos()), n, maxTerms)
			}
			mark(x)
			return true // a condition inside an operand (a call's argument) counts on its own
		})
	}
}

func TestBooleanParametersAreJustified(t *testing.T) {
	fset, files := parseBuildFiles(t, ".")
	seen := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var ft *ast.FuncType
			name := ""
			switch x := n.(type) {
			case *ast.FuncDecl:
				ft, name = x.Type, x.Name.Name
			case *ast.FuncLit:
				ft, name = x.Type, "a function literal"
			default:
				return true
			}
			for _, p := range ft.Params.List {
				if id, ok := p.Type.(*ast.Ident); !ok || id.Name != "bool" {
					continue
				}
				if _, ok := boolParams[name]; !ok {
					t.Errorf("%s: %s takes a bool: name the choice (a type of its own), or say in boolParams why not", fset.Position(p.Pos()), name)
				}
				seen[name] = true
			}
			return true
		})
	}
	for name := range boolParams {
		if !seen[name] {
			t.Errorf("boolParams names %s, which takes no bool now: take it out", name)
		}
	}
	if len(boolParams) > 5 {
		t.Errorf("%d functions take a bool (at most 5)", len(boolParams))
	}
}

// TestCallIsSmall bounds the engine's call: what every call has. What only
// one way of waiting needs lives in that way's own type.
func TestCallIsSmall(t *testing.T) {
	fset, files := parseBuildFiles(t, ".")
	found := false
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != "call" {
				return true
			}
			found = true
			fields, bools := 0, 0
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				k := max(len(fl.Names), 1)
				fields += k
				if id, ok := fl.Type.(*ast.Ident); ok && id.Name == "bool" {
					bools += k
				}
			}
			if fields > 20 || bools > 5 {
				t.Errorf("%s: call has %d fields, %d of them bool (at most 20 and 5)", fset.Position(ts.Pos()), fields, bools)
			}
			return false
		})
	}
	if !found {
		t.Error("no type call in the root package")
	}
}
