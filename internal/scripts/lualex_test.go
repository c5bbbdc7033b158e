package scripts

import (
	"fmt"
	"strings"
)

// The tokens of the Lua reader of luaparse_test.go.

type tokenKind uint8

const (
	tokName tokenKind = iota
	tokString
	tokNumber
	tokOp
	tokEOF
)

type token struct {
	kind tokenKind
	text string // a string's value; otherwise the source text
	raw  string // the source text (a string with its quotes)
	line int
}

// lexLua splits src into tokens, dropping comments and white space.
func lexLua(src string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(src[i:], "--"):
			if n := longBracket(src[i+2:]); n > 0 {
				end, ok := closeLong(src, i+2+n, n)
				if !ok {
					return nil, fmt.Errorf("line %d: unclosed long comment", line)
				}
				line += strings.Count(src[i:end], "\n")
				i = end
				continue
			}
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '[' && longBracket(src[i:]) > 0:
			n := longBracket(src[i:])
			end, ok := closeLong(src, i+n, n)
			if !ok {
				return nil, fmt.Errorf("line %d: unclosed long string", line)
			}
			toks = append(toks, token{kind: tokString, text: src[i+n : end-n], raw: src[i:end], line: line})
			line += strings.Count(src[i:end], "\n")
			i = end
		case c == '\'' || c == '"':
			j := i + 1
			var b strings.Builder
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\n' {
					return nil, fmt.Errorf("line %d: unfinished string", line)
				}
				if src[j] == '\\' && j+1 < len(src) {
					j++
				}
				b.WriteByte(src[j])
			}
			if j == len(src) {
				return nil, fmt.Errorf("line %d: unfinished string", line)
			}
			toks = append(toks, token{kind: tokString, text: b.String(), raw: src[i : j+1], line: line})
			i = j + 1
		case isLetter(c):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tokName, text: src[i:j], raw: src[i:j], line: line})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E')) {
				j++
			}
			toks = append(toks, token{kind: tokNumber, text: src[i:j], raw: src[i:j], line: line})
			i = j
		default:
			op := src[i : i+1]
			for _, long := range []string{"...", "..", "==", "~=", "<=", ">="} {
				if strings.HasPrefix(src[i:], long) {
					op = long
					break
				}
			}
			toks = append(toks, token{kind: tokOp, text: op, raw: op, line: line})
			i += len(op)
		}
	}
	return append(toks, token{kind: tokEOF, line: line}), nil
}

func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// longBracket returns the length of the opening long bracket ("[[", "[=[",
// ...) at the start of s, 0 when there is none.
func longBracket(s string) int {
	if !strings.HasPrefix(s, "[") {
		return 0
	}
	n := 1
	for n < len(s) && s[n] == '=' {
		n++
	}
	if n < len(s) && s[n] == '[' {
		return n + 1
	}
	return 0
}

// closeLong returns the end of the long bracket of length n opened before
// from in src: the index after its closing bracket.
func closeLong(src string, from, n int) (int, bool) {
	closing := "]" + strings.Repeat("=", n-2) + "]"
	j := strings.Index(src[from:], closing)
	if j < 0 {
		return 0, false
	}
	return from + j + len(closing), true
}
