package scripts

import "strings"

// The expressions of the Lua reader of luaparse_test.go.

var binaryOps = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "^": true, "..": true,
	"==": true, "~=": true, "<": true, "<=": true, ">": true, ">=": true, "and": true, "or": true}

// expr reads an expression. Operator precedence does not matter here: an
// expression with an operator is exOther whatever its shape.
func (p *luaParser) expr() *luaExpr {
	start := p.pos
	unary := false
	for p.is("not") || p.is("-") || p.is("#") {
		p.next()
		unary = true
	}
	e := p.simple()
	binary := false
	for t := p.peek(); (t.kind == tokOp || t.kind == tokName) && binaryOps[t.text]; t = p.peek() {
		p.next()
		for p.is("not") || p.is("-") || p.is("#") {
			p.next()
		}
		p.simple()
		binary = true
	}
	if unary || binary {
		return &luaExpr{kind: exOther, text: p.text(start), line: p.toks[start].line}
	}
	return e
}

func (p *luaParser) simple() *luaExpr {
	start := p.pos
	t := p.peek()
	switch {
	case t.kind == tokNumber, p.is("nil"), p.is("true"), p.is("false"):
		p.next()
		return &luaExpr{kind: exOther, text: t.raw, line: t.line}
	case t.kind == tokString:
		p.next()
		return &luaExpr{kind: exString, str: t.text, text: t.raw, line: t.line}
	case p.accept("..."):
		return &luaExpr{kind: exVararg, text: "...", line: t.line}
	case p.accept("function"):
		for _, param := range p.funcBody() {
			p.bind(param, unknown) // an anonymous function's callers are unknown
		}
		return &luaExpr{kind: exOther, text: p.text(start), line: t.line}
	case p.is("{"):
		p.table()
		return &luaExpr{kind: exOther, text: p.text(start), line: t.line}
	}
	return p.suffixed()
}

// table reads a table constructor.
func (p *luaParser) table() {
	p.expect("{")
	for !p.is("}") {
		switch {
		case p.accept("["):
			p.expr()
			p.expect("]")
			p.expect("=")
			p.expr()
		case p.peek().kind == tokName && p.toks[p.pos+1].text == "=" && p.toks[p.pos+1].kind == tokOp:
			p.next()
			p.next()
			p.expr()
		default:
			p.expr()
		}
		if !p.accept(",") && !p.accept(";") {
			break
		}
	}
	p.expect("}")
}

// suffixed reads a name or a parenthesized expression followed by indexes,
// fields and calls.
func (p *luaParser) suffixed() *luaExpr {
	start := p.pos
	var e *luaExpr
	if p.accept("(") {
		p.expr()
		p.expect(")")
		e = &luaExpr{kind: exOther, text: p.text(start), line: p.toks[start].line} // (f()) gives one value
	} else {
		name := p.name()
		e = &luaExpr{kind: exName, name: name, text: name, line: p.toks[start].line}
	}
	for {
		switch {
		case p.is("["):
			p.next()
			p.expr()
			p.expect("]")
			kind := exOther
			if e.kind == exName && (e.name == "KEYS" || e.name == "ARGV") {
				kind = map[string]exprKind{"KEYS": exKeys, "ARGV": exArgv}[e.name]
			}
			e = &luaExpr{kind: kind, text: p.text(start), line: e.line}
		case p.is("."):
			p.next()
			field := p.name()
			name := ""
			if e.kind == exName {
				name = e.name + "." + field
			}
			e = &luaExpr{kind: exOther, name: name, text: p.text(start), line: e.line}
		case p.is(":"):
			p.next()
			p.name()
			e = p.call(start, &luaExpr{kind: exOther, text: p.text(start), line: e.line})
		case p.is("("), p.is("{"), p.peek().kind == tokString:
			e = p.call(start, e)
		default:
			p.used(e)
			return e
		}
	}
}

// used records a name or a field used as a value, not called.
func (p *luaParser) used(e *luaExpr) {
	switch {
	case e.kind == exName:
		p.prog.values[e.name] = true
	case e.kind != exCall && (e.name == "redis.call" || e.name == "redis.pcall"):
		p.fail("%s is used as a value: its calls could not be checked", e.name)
	}
}

// call reads the arguments of a call of callee.
func (p *luaParser) call(start int, callee *luaExpr) *luaExpr {
	c := &luaExpr{kind: exCall, name: callee.name, callee: callee, line: callee.line}
	switch {
	case p.accept("("):
		if !p.is(")") {
			c.args = p.exprList()
		}
		p.expect(")")
	case p.is("{"):
		s := p.pos
		p.table()
		c.args = []*luaExpr{{kind: exOther, text: p.text(s), line: callee.line}}
	default:
		t := p.next()
		c.args = []*luaExpr{{kind: exString, str: t.text, text: t.raw, line: t.line}}
	}
	c.text = p.text(start)
	p.prog.calls = append(p.prog.calls, c)
	return c
}

// text returns the source of the tokens from start to the current one.
func (p *luaParser) text(start int) string {
	var b strings.Builder
	for i := start; i < p.pos; i++ {
		t := p.toks[i]
		if i > start && (t.kind != tokOp || t.text == ".." || binaryOps[t.text] || t.text == "=") &&
			p.toks[i-1].text != "(" && p.toks[i-1].text != "[" && p.toks[i-1].text != "." {
			b.WriteByte(' ')
		}
		b.WriteString(t.raw)
	}
	return b.String()
}
