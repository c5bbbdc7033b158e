package scripts

import "fmt"

// A small reader of Lua 5.1 (the Lua of Redis scripts) for the tests that
// check what the scripts do with keys (declared_test.go). It reads the
// statements and expressions the language has, but records only what those
// checks need: every call with its arguments, every value each name is
// given, each named function's parameters, and the names used as values.
// Scopes are not told apart: a name given a value anywhere is that name
// everywhere, which can only make the checks stricter.

// exprKind is the shape of an expression, as far as the checks care.
type exprKind uint8

const (
	exOther  exprKind = iota
	exKeys            // KEYS[<expr>]
	exArgv            // ARGV[<expr>]
	exName            // a name alone
	exString          // a string literal
	exCall            // a call, not in parentheses (it may give several values)
	exVararg          // ...
)

type luaExpr struct {
	kind   exprKind
	name   string     // exName: the name; exCall: the callee, "redis.call" or a name ("" for others)
	str    string     // exString: the value
	args   []*luaExpr // exCall: the arguments
	callee *luaExpr   // exCall: what is called
	text   string     // the source, for messages
	line   int
}

// luaProgram is what reading a source records.
type luaProgram struct {
	calls []*luaExpr // every call, in source order
	// bindings holds every value each name is given: by local, by
	// assignment, as a loop variable, as a parameter at a call site.
	bindings map[string][]*luaExpr
	params   map[string][]string // each named function's parameters
	values   map[string]bool     // names used as values (not only called)
}

type luaParser struct {
	toks []token
	pos  int
	prog *luaProgram
}

// parseLua reads src.
func parseLua(src string) (*luaProgram, error) {
	toks, err := lexLua(src)
	if err != nil {
		return nil, err
	}
	p := &luaParser{toks: toks, prog: &luaProgram{bindings: map[string][]*luaExpr{}, params: map[string][]string{},
		values: map[string]bool{}}}
	err = p.catch(func() {
		p.block()
		p.expect("")
	})
	if err != nil {
		return nil, err
	}
	p.bindParams()
	return p.prog, nil
}

type luaSyntaxError struct{ err error }

func (p *luaParser) catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(luaSyntaxError)
			if !ok {
				panic(r)
			}
			err = se.err
		}
	}()
	f()
	return nil
}

func (p *luaParser) fail(format string, args ...any) {
	panic(luaSyntaxError{fmt.Errorf("line %d: %s", p.peek().line, fmt.Sprintf(format, args...))})
}

func (p *luaParser) peek() token { return p.toks[p.pos] }

func (p *luaParser) next() token {
	t := p.toks[p.pos]
	if t.kind != tokEOF {
		p.pos++
	}
	return t
}

// is reports whether the next token is the keyword or operator s ("" for
// the end).
func (p *luaParser) is(s string) bool {
	t := p.peek()
	if s == "" {
		return t.kind == tokEOF
	}
	return (t.kind == tokName || t.kind == tokOp) && t.text == s
}

func (p *luaParser) accept(s string) bool {
	if p.is(s) {
		p.next()
		return true
	}
	return false
}

func (p *luaParser) expect(s string) {
	if !p.accept(s) {
		p.fail("expected %q, found %q", s, p.peek().raw)
	}
}

func (p *luaParser) name() string {
	t := p.next()
	if t.kind != tokName || keywords[t.text] {
		p.fail("expected a name, found %q", t.raw)
	}
	return t.text
}

var keywords = map[string]bool{"and": true, "break": true, "do": true, "else": true, "elseif": true, "end": true,
	"false": true, "for": true, "function": true, "if": true, "in": true, "local": true, "nil": true, "not": true,
	"or": true, "repeat": true, "return": true, "then": true, "true": true, "until": true, "while": true}

func (p *luaParser) bind(name string, e *luaExpr) {
	p.prog.bindings[name] = append(p.prog.bindings[name], e)
}

// unknown is the value of a name given something the checks cannot see:
// nil, a loop counter, one of several values.
var unknown = &luaExpr{kind: exOther, text: "(unknown)"}

// bindList gives names the values of exps, as Lua does ("" for a target
// that is no name); the names left without one get unknown values.
func (p *luaParser) bindList(names []string, exps []*luaExpr) {
	for i, name := range names {
		if name == "" {
			continue
		}
		if i < len(exps) {
			p.bind(name, exps[i])
		} else {
			p.bind(name, unknown)
		}
	}
}

func (p *luaParser) block() {
	for !p.is("") && !p.is("end") && !p.is("else") && !p.is("elseif") && !p.is("until") {
		if p.is("return") {
			p.next()
			if !p.is("") && !p.is("end") && !p.is("else") && !p.is("elseif") && !p.is("until") && !p.is(";") {
				p.exprList()
			}
			p.accept(";")
			return
		}
		p.statement()
	}
}

func (p *luaParser) statement() {
	switch {
	case p.accept(";"), p.accept("break"):
	case p.accept("local"):
		if p.accept("function") {
			name := p.name()
			p.prog.params[name] = p.funcBody()
			return
		}
		names := []string{p.name()}
		for p.accept(",") {
			names = append(names, p.name())
		}
		var exps []*luaExpr
		if p.accept("=") {
			exps = p.exprList()
		}
		p.bindList(names, exps)
	case p.accept("function"):
		name := p.name()
		simple := true
		for p.accept(".") || p.accept(":") {
			p.name()
			simple = false
		}
		params := p.funcBody()
		if simple {
			p.prog.params[name] = params
		}
	case p.accept("if"):
		p.expr()
		p.expect("then")
		p.block()
		for p.accept("elseif") {
			p.expr()
			p.expect("then")
			p.block()
		}
		if p.accept("else") {
			p.block()
		}
		p.expect("end")
	case p.accept("while"):
		p.expr()
		p.expect("do")
		p.block()
		p.expect("end")
	case p.accept("do"):
		p.block()
		p.expect("end")
	case p.accept("repeat"):
		p.block()
		p.expect("until")
		p.expr()
	case p.accept("for"):
		p.forStatement()
	default:
		p.exprStatement()
	}
}

func (p *luaParser) forStatement() {
	names := []string{p.name()}
	if p.accept("=") {
		p.bind(names[0], unknown) // a counter
		p.expr()
		p.expect(",")
		p.expr()
		if p.accept(",") {
			p.expr()
		}
	} else {
		for p.accept(",") {
			names = append(names, p.name())
		}
		p.expect("in")
		exps := p.exprList()
		// for i, key in ipairs(KEYS): key is a KEYS entry.
		overKeys := len(exps) == 1 && exps[0].kind == exCall && exps[0].name == "ipairs" &&
			len(exps[0].args) == 1 && exps[0].args[0].kind == exName && exps[0].args[0].name == "KEYS"
		for i, name := range names {
			if overKeys && i == 1 {
				p.bind(name, &luaExpr{kind: exKeys, text: "KEYS[i]"})
				continue
			}
			p.bind(name, unknown)
		}
	}
	p.expect("do")
	p.block()
	p.expect("end")
}

// exprStatement reads a call or an assignment.
func (p *luaParser) exprStatement() {
	first := p.suffixed()
	if !p.is("=") && !p.is(",") {
		if first.kind != exCall {
			p.fail("%q is not a statement", first.text)
		}
		return
	}
	targets := []*luaExpr{first}
	for p.accept(",") {
		targets = append(targets, p.suffixed())
	}
	p.expect("=")
	exps := p.exprList()
	names := make([]string, len(targets))
	for i, t := range targets {
		if t.kind == exName {
			names[i] = t.name // else a table's field: no name
		}
	}
	p.bindList(names, exps)
}

// funcBody reads a function's parameters and body and returns the
// parameters.
func (p *luaParser) funcBody() []string {
	p.expect("(")
	var params []string
	for !p.is(")") {
		if p.accept("...") {
			break
		}
		params = append(params, p.name())
		if !p.accept(",") {
			break
		}
	}
	p.expect(")")
	p.block()
	p.expect("end")
	return params
}

func (p *luaParser) exprList() []*luaExpr {
	exps := []*luaExpr{p.expr()}
	for p.accept(",") {
		exps = append(exps, p.expr())
	}
	return exps
}

// bindParams gives each named function's parameters the arguments of its
// calls; a function used as a value (its callers unseen) gives them unknown
// values.
func (p *luaParser) bindParams() {
	for name, params := range p.prog.params {
		if p.prog.values[name] {
			p.bindList(params, nil)
		}
	}
	for _, c := range p.prog.calls {
		params, ok := p.prog.params[c.name]
		if !ok || c.callee.kind != exName {
			continue
		}
		for i, param := range params {
			if i < len(c.args) {
				p.bind(param, c.args[i]) // a call's first value, if a call: not a KEYS entry
			} else {
				p.bind(param, unknown)
			}
		}
	}
}
