package pgnode

import (
	"fmt"
	"strconv"
	"strings"
)

// The simulated server understands only the statement shapes a lock client
// sends. Everything else is refused the way Postgres refuses it: a syntax
// error (SQLSTATE 42601) for an unknown statement, "function ... does not
// exist" (42883) for an unknown function or a known one with the wrong
// number of arguments. Parsing is a tiny tokenizer plus a recursive-descent
// reader for these shapes:
//
//	SELECT 1
//	SELECT pg_advisory_lock(key) | pg_try_advisory_xact_lock_shared(k1, k2) | ...
//	SELECT pg_advisory_unlock_all()
//	BEGIN [WORK|TRANSACTION] | START TRANSACTION
//	COMMIT | END | ROLLBACK | ABORT
//	UPDATE fence SET token = v WHERE token < v     (the fencing row)
//	SELECT token FROM fence
//	DISCARD ALL                                    (a pooler's reset query)
//
// where key is an integer literal, a $n parameter, optionally negated,
// parenthesised or cast (::bigint, ::int), as pgx's simple protocol and
// hand-written SQL produce them.

// StatementKind says what a parsed statement does.
type StatementKind int

const (
	StmtEmpty StatementKind = iota
	StmtSelectInt
	StmtLockCall
	StmtBegin
	StmtCommit
	StmtRollback
	StmtFenceUpdate
	StmtFenceRead
	StmtDiscardAll
)

// Arg is one argument: a literal, or the 1-based parameter number.
type Arg struct {
	Param int // 0 for a literal
	Value int64
	Null  bool // the literal NULL
}

// Statement is one parsed SQL statement.
type Statement struct {
	Kind   StatementKind
	Column string // result column name (SELECT)
	Int    int64  // StmtSelectInt's value
	Func   LockFunc
	Args   []Arg // lock key (1 or 2 args) or the fence's new token (1 arg)
}

// LockFunc is one of the advisory lock functions (PG15 manual, table 9.97).
type LockFunc struct {
	Name   string
	Mode   Mode
	Xact   bool // _xact: held until transaction end
	Try    bool // pg_try_*: never waits, returns bool
	Unlock bool // pg_advisory_unlock*: returns bool
	All    bool // pg_advisory_unlock_all: no key, returns void
}

// Returns says the function's result type: bool for try and unlock, void
// for the waiting lock functions and unlock_all.
func (f LockFunc) ReturnsBool() bool { return f.Try || (f.Unlock && !f.All) }

var lockFuncs = map[string]LockFunc{}

func init() {
	for _, xact := range []bool{false, true} {
		for _, try := range []bool{false, true} {
			for _, mode := range []Mode{Exclusive, Shared} {
				name := "pg_"
				if try {
					name += "try_"
				}
				name += "advisory_"
				if xact {
					name += "xact_"
				}
				name += "lock"
				if mode == Shared {
					name += "_shared"
				}
				lockFuncs[name] = LockFunc{Name: name, Mode: mode, Xact: xact, Try: try}
			}
		}
	}
	lockFuncs["pg_advisory_unlock"] = LockFunc{Name: "pg_advisory_unlock", Mode: Exclusive, Unlock: true}
	lockFuncs["pg_advisory_unlock_shared"] = LockFunc{Name: "pg_advisory_unlock_shared", Mode: Shared, Unlock: true}
	lockFuncs["pg_advisory_unlock_all"] = LockFunc{Name: "pg_advisory_unlock_all", Unlock: true, All: true}
}

// SQLError is an error the server reports as an ErrorResponse.
type SQLError struct {
	Code     string // SQLSTATE
	Message  string
	Hint     string
	Position int // 1-based character position in the query, 0 if none
}

func (e *SQLError) Error() string { return fmt.Sprintf("ERROR: %s (SQLSTATE %s)", e.Message, e.Code) }

type token struct {
	text string
	pos  int // 1-based, as Postgres reports positions
}

// tokenize splits a query into identifiers, numbers, $n, :: and single
// punctuation characters. Comments and string literals are not part of the
// supported vocabulary; a quote becomes a token and is refused by the parser.
func tokenize(q string) []token {
	var toks []token
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c) || isDigit(c) || c == '$':
			j := i + 1
			for j < len(q) && (isIdentStart(q[j]) || isDigit(q[j])) {
				j++
			}
			toks = append(toks, token{q[i:j], i + 1})
			i = j
		case c == '\'':
			// A string literal, '' escaping a quote: pgx's simple protocol
			// sends integer arguments of some Go types this way.
			j := i + 1
			for j < len(q) && (q[j] != '\'' || (j+1 < len(q) && q[j+1] == '\'')) {
				if q[j] == '\'' {
					j++
				}
				j++
			}
			if j < len(q) {
				j++
			}
			toks = append(toks, token{q[i:j], i + 1})
			i = j
		case c == ':' && i+1 < len(q) && q[i+1] == ':':
			toks = append(toks, token{"::", i + 1})
			i += 2
		default:
			toks = append(toks, token{q[i : i+1], i + 1})
			i++
		}
	}
	return toks
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// SplitStatements cuts a simple-protocol query string at semicolons, as
// Postgres runs each part in turn (inside one implicit transaction).
func SplitStatements(q string) [][]token {
	var out [][]token
	var cur []token
	for _, t := range tokenize(q) {
		if t.text == ";" {
			out = append(out, cur)
			cur = nil
			continue
		}
		cur = append(cur, t)
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// ParseStatement parses a single statement (no semicolons but a trailing one).
func ParseStatement(q string) (Statement, error) {
	parts := SplitStatements(q)
	if len(parts) > 2 || (len(parts) == 2 && len(parts[1]) > 0) {
		return Statement{}, &SQLError{Code: "42601", Message: "cannot insert multiple commands into a prepared statement"}
	}
	return parseTokens(parts[0], len(q))
}

type parser struct {
	toks []token
	i    int
	end  int // position reported for "at end of input"
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return strings.ToLower(p.toks[p.i].text)
	}
	return ""
}

func (p *parser) next() string { s := p.peek(); p.i++; return s }

func (p *parser) accept(words ...string) bool {
	if p.peek() == words[0] {
		p.i++
		return true
	}
	return false
}

// syntaxError reports the token at the cursor, worded as Postgres' parser.
func (p *parser) syntaxError() error {
	if p.i >= len(p.toks) {
		return &SQLError{Code: "42601", Message: "syntax error at end of input", Position: p.end + 1}
	}
	t := p.toks[p.i]
	return &SQLError{Code: "42601", Message: fmt.Sprintf("syntax error at or near %q", t.text), Position: t.pos}
}

func (p *parser) expect(word string) error {
	if p.accept(word) {
		return nil
	}
	return p.syntaxError()
}

func (p *parser) done() error {
	if p.i < len(p.toks) {
		return p.syntaxError()
	}
	return nil
}

func parseTokens(toks []token, end int) (Statement, error) {
	p := &parser{toks: toks, end: end}
	var st Statement
	var err error
	switch p.next() {
	case "":
		return Statement{Kind: StmtEmpty}, nil
	case "begin":
		_ = p.accept("work") || p.accept("transaction")
		st.Kind = StmtBegin
	case "start":
		err = p.expect("transaction")
		st.Kind = StmtBegin
	case "commit", "end":
		_ = p.accept("work") || p.accept("transaction")
		st.Kind = StmtCommit
	case "rollback", "abort":
		_ = p.accept("work") || p.accept("transaction")
		st.Kind = StmtRollback
	case "select":
		st, err = p.selectList()
	case "update":
		st, err = p.fenceUpdate()
	case "discard":
		// DISCARD ALL: PgBouncer's server_reset_query. Of what it resets,
		// only the session's advisory locks exist here
		// (pg_advisory_unlock_all, PG15 manual, DISCARD).
		err = p.expect("all")
		st.Kind = StmtDiscardAll
	default:
		p.i--
		return st, p.syntaxError()
	}
	if err != nil {
		return st, err
	}
	return st, p.done()
}

func (p *parser) selectList() (Statement, error) {
	start := p.i
	name := p.peek()
	if name == "token" {
		p.i++
		if err := p.expect("from"); err != nil {
			return Statement{}, err
		}
		if err := p.expect("fence"); err != nil {
			return Statement{}, err
		}
		return Statement{Kind: StmtFenceRead, Column: "token"}, nil
	}
	if p.i < len(p.toks) && isIdentStart(name[0]) {
		p.i++
		st, err := p.lockCall(name, start)
		if err != nil {
			return st, err
		}
		st.Column = name
		return st, p.alias(&st)
	}
	a, err := p.arg()
	if err != nil {
		return Statement{}, err
	}
	if a.Param != 0 {
		p.i = start
		return Statement{}, p.syntaxError()
	}
	st := Statement{Kind: StmtSelectInt, Int: a.Value, Column: "?column?"}
	return st, p.alias(&st)
}

func (p *parser) alias(st *Statement) error {
	if p.accept("as") {
		name := p.next()
		if name == "" || !isIdentStart(name[0]) {
			p.i--
			return p.syntaxError()
		}
		st.Column = name
	}
	return nil
}

func (p *parser) lockCall(name string, start int) (Statement, error) {
	if err := p.expect("("); err != nil {
		return Statement{}, err
	}
	var args []Arg
	if !p.accept(")") {
		for {
			a, err := p.arg()
			if err != nil {
				return Statement{}, err
			}
			args = append(args, a)
			if p.accept(")") {
				break
			}
			if err := p.expect(","); err != nil {
				return Statement{}, err
			}
		}
	}
	f, known := lockFuncs[name]
	want := 1
	if f.All {
		want = 0
	}
	if !known || (len(args) != want && !(want == 1 && len(args) == 2)) {
		return Statement{}, undefinedFunction(name, args, p.toks[start].pos)
	}
	return Statement{Kind: StmtLockCall, Func: f, Args: args}, nil
}

// undefinedFunction words 42883 as PG15's ParseFuncOrColumn does; integer
// literals that fit int4 are typed integer there, so "integer" is what a
// user sees for small keys.
func undefinedFunction(name string, args []Arg, pos int) error {
	types := make([]string, len(args))
	for i, a := range args {
		switch {
		case a.Param != 0:
			types[i] = "unknown"
		case a.Value >= -1<<31 && a.Value < 1<<31:
			types[i] = "integer"
		default:
			types[i] = "bigint"
		}
	}
	return &SQLError{
		Code:     "42883",
		Message:  fmt.Sprintf("function %s(%s) does not exist", name, strings.Join(types, ", ")),
		Hint:     "No function matches the given name and argument types. You might need to add explicit type casts.",
		Position: pos,
	}
}

// arg reads an integer literal or $n, optionally negated, parenthesised
// and cast to an integer type.
func (p *parser) arg() (Arg, error) {
	var a Arg
	switch t := p.peek(); {
	case t == "-":
		p.i++
		a, err := p.arg()
		if err != nil {
			return a, err
		}
		if a.Param != 0 || a.Null {
			p.i--
			return a, p.syntaxError()
		}
		a.Value = -a.Value
		return a, nil
	case t == "(":
		p.i++
		var err error
		if a, err = p.arg(); err != nil {
			return a, err
		}
		if err := p.expect(")"); err != nil {
			return a, err
		}
	case strings.HasPrefix(t, "$"):
		n, err := strconv.Atoi(t[1:])
		if err != nil || n < 1 {
			return a, p.syntaxError()
		}
		p.i++
		a.Param = n
	case t == "null":
		p.i++
		a.Null = true
	case strings.HasPrefix(t, "'"):
		// An unknown-typed literal coerced to the integer argument type.
		text := strings.ReplaceAll(strings.TrimSuffix(t[1:], "'"), "''", "'")
		v, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
		if err != nil || !strings.HasSuffix(t, "'") || len(t) < 2 {
			return a, &SQLError{Code: "22P02", Message: fmt.Sprintf("invalid input syntax for type bigint: %q", text), Position: p.toks[p.i].pos}
		}
		p.i++
		a.Value = v
	case t != "" && isDigit(t[0]):
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return a, p.syntaxError()
		}
		p.i++
		a.Value = v
	default:
		return a, p.syntaxError()
	}
	if p.accept("::") {
		switch p.next() {
		case "bigint", "int8", "int", "int4", "integer":
		default:
			p.i--
			return a, p.syntaxError()
		}
	}
	return a, nil
}

// fenceUpdate reads UPDATE fence SET token = v WHERE token < v, the
// compare-on-write that makes a late holder's write fail (Kleppmann,
// "How to do distributed locking", 2016: the storage checks the token).
func (p *parser) fenceUpdate() (Statement, error) {
	for _, w := range []string{"fence", "set", "token", "="} {
		if err := p.expect(w); err != nil {
			return Statement{}, err
		}
	}
	v, err := p.arg()
	if err != nil {
		return Statement{}, err
	}
	for _, w := range []string{"where", "token", "<"} {
		if err := p.expect(w); err != nil {
			return Statement{}, err
		}
	}
	v2, err := p.arg()
	if err != nil {
		return Statement{}, err
	}
	if v2 != v {
		p.i--
		return Statement{}, p.syntaxError()
	}
	return Statement{Kind: StmtFenceUpdate, Args: []Arg{v}}, nil
}
