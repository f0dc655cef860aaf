package mssqlnode

// The T-SQL this server runs: the statements a lock written against
// sp_getapplock sends, and nothing more. A batch (or sp_executesql's
// statement) is split at semicolons; each statement is one of
//
//	DECLARE @v INT [= n]             SET @v = value
//	EXEC[UTE] [@v =] proc [args]     SELECT expr [AS name], ...
//	BEGIN TRAN[SACTION]              COMMIT [TRAN[SACTION]]
//	ROLLBACK [TRAN[SACTION]]         KILL spid
//	SELECT version FROM fence WHERE id = 1
//	UPDATE fence SET version = version + 1 WHERE id = 1 AND version = value
//
// where proc is sp_getapplock or sp_releaseapplock, args are "@Name =
// value" or positional values, and an expression is a value, @@SPID,
// APPLOCK_MODE(principal, resource, owner) or APPLOCK_TEST(principal,
// resource, mode, owner). A value is a number, 'text', N'text' or a
// variable or parameter (@name). Anything else is answered with an error
// that names the statement, so a lock that relies on more fails loudly.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	tokDoneProc = 0xFE
	// errNumber is the error number of this server's own errors (50000,
	// the first user-defined number): SQL Server's numbers are not
	// modelled.
	errNumber = 50000
)

// exec is the state of one batch: its variables and whether it failed.
type exec struct {
	ss     *session
	t      *tokens
	vars   map[string]value
	failed bool
	status int32 // the return status of a direct RPC
}

// batch runs sql; params are sp_executesql's parameters (nil for a plain
// batch). For an RPC the caller closes the reply with DONEPROC.
func (ss *session) batch(t *tokens, sql string, params map[string]value, rpc bool) *exec {
	x := &exec{ss: ss, t: t, vars: map[string]value{}}
	for k, v := range params {
		x.vars[strings.ToLower(k)] = v
	}
	for _, stmt := range splitStatements(sql) {
		if x.failed || ss.cancelled {
			break
		}
		x.statement(stmt)
	}
	if !rpc {
		if x.failed {
			t.done(doneError, 0)
		} else {
			t.done(0, 0)
		}
	}
	return x
}

func (x *exec) fail(format string, args ...any) {
	x.t.sqlError(errNumber, fmt.Sprintf(format, args...), x.ss.srv.Name)
	x.failed = true
}

// splitStatements splits at semicolons outside quotes.
func splitStatements(sql string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(sql); i++ {
		switch sql[i] {
		case '\'':
			quoted = !quoted
		case ';':
			if !quoted {
				out = append(out, strings.TrimSpace(sql[start:i]))
				start = i + 1
			}
		}
	}
	out = append(out, strings.TrimSpace(sql[start:]))
	var kept []string
	for _, s := range out {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return kept
}

// words splits a statement into tokens: words, quoted strings, numbers,
// and the punctuation = , ( ).
func words(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '=' || c == ',' || c == '(' || c == ')':
			out = append(out, string(c))
			i++
		case c == '\'' || (c == 'N' || c == 'n') && i+1 < len(s) && s[i+1] == '\'':
			j := i + 1
			if c != '\'' {
				j++
			}
			for j < len(s) && s[j] != '\'' {
				j++
			}
			out = append(out, s[i:min(j+1, len(s))])
			i = j + 1
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r=,()'", rune(s[j])) {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

func (x *exec) statement(stmt string) {
	w := words(stmt)
	if x.fenceRow(w) {
		return
	}
	switch kw := strings.ToUpper(w[0]); {
	case kw == "DECLARE" && len(w) >= 3:
		x.vars[strings.ToLower(w[1])] = int64(0)
		if len(w) >= 5 && w[3] == "=" {
			x.vars[strings.ToLower(w[1])] = x.value(w[4])
		}
	case kw == "SET" && len(w) == 4 && w[2] == "=":
		x.vars[strings.ToLower(w[1])] = x.value(w[3])
	case kw == "EXEC" || kw == "EXECUTE":
		x.execProc(w[1:])
	case kw == "SELECT":
		x.selectRow(w[1:])
	case kw == "BEGIN" && len(w) <= 2:
		x.ss.begin(x.t)
	case kw == "COMMIT" || kw == "ROLLBACK":
		x.ss.finish(x.t, kw == "COMMIT")
	case kw == "KILL" && len(w) == 2:
		n, err := strconv.Atoi(w[1])
		if err != nil || !x.ss.srv.Kill(int16(n)) {
			x.fail("Process ID %s is not an active process ID.", w[1])
		}
	default:
		x.fail("locklab's simulated SQL Server does not run this statement: %s", stmt)
	}
}

// value resolves a literal or a variable; unknown variables are NULL.
func (x *exec) value(tok string) value {
	switch {
	case strings.HasPrefix(tok, "@"):
		return x.vars[strings.ToLower(tok)]
	case strings.HasPrefix(tok, "'"):
		return strings.TrimSuffix(tok[1:], "'")
	case strings.HasPrefix(tok, "N'") || strings.HasPrefix(tok, "n'"):
		return strings.TrimSuffix(tok[2:], "'")
	}
	if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return n
	}
	return nil
}

// execProc runs EXEC [@v =] proc args.
func (x *exec) execProc(w []string) {
	target := ""
	if len(w) >= 3 && strings.HasPrefix(w[0], "@") && w[1] == "=" {
		target, w = strings.ToLower(w[0]), w[2:]
	}
	if len(w) == 0 {
		x.fail("EXEC without a procedure")
		return
	}
	proc := w[0]
	args := map[string]value{}
	var positional []value
	for i := 1; i < len(w); i++ {
		switch {
		case w[i] == ",":
		case i+2 < len(w) && w[i+1] == "=":
			args[strings.ToLower(w[i])] = x.value(w[i+2])
			i += 2
		default:
			positional = append(positional, x.value(w[i]))
		}
	}
	code, ok := x.call(proc, args, positional)
	if ok && target != "" {
		x.vars[target] = int64(code)
	}
}

// call runs a stored procedure by name.
func (x *exec) call(proc string, args map[string]value, positional []value) (Code, bool) {
	names := map[string][]string{
		"sp_getapplock":     {"@resource", "@lockmode", "@lockowner", "@locktimeout", "@dbprincipal"},
		"sp_releaseapplock": {"@resource", "@lockowner", "@dbprincipal"},
	}
	p := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(proc, "dbo."), "sys."))
	order, ok := names[p]
	if !ok {
		x.fail("Could not find stored procedure '%s'.", proc)
		return 0, false
	}
	for i, v := range positional {
		if i < len(order) {
			args[order[i]] = v
		}
	}
	for k := range args {
		if !contains(order, k) {
			x.fail("Procedure or function %s has too many arguments specified, or %s is not one of its parameters.", p, k)
			return CallError, false
		}
	}
	if p == "sp_getapplock" {
		return x.getAppLock(args), true
	}
	return x.releaseAppLock(args), true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// owner reads @LockOwner (default Transaction); a Transaction owner
// outside a transaction is a call error.
func (x *exec) owner(v value, what string) (Owner, bool) {
	o := Owner{SPID: x.ss.spid, Kind: OwnerTransaction}
	if s, ok := v.(string); ok && v != nil {
		switch {
		case equalFold(s, "Session"):
			o.Kind = OwnerSession
		case equalFold(s, "Transaction"):
		default:
			x.fail("The parameter '@LockOwner' is incorrect: '%s'; expected Transaction or Session.", s)
			return o, false
		}
	}
	if o.Kind == OwnerTransaction && x.ss.tranID == 0 {
		x.fail("You attempted to %s a transactional application lock without an active transaction.", what)
		return o, false
	}
	return o, true
}

// resourceKey is the name a lock is kept under: the principal and the
// resource, truncated to nvarchar(255), compared byte for byte
// (sp_getapplock, @Resource: binary-compared, case-sensitive).
func (x *exec) resourceKey(args map[string]value) (string, bool) {
	res, ok := args["@resource"].(string)
	if !ok || res == "" {
		x.fail("The parameter '@Resource' is missing or NULL.")
		return "", false
	}
	if r := []rune(res); len(r) > 255 {
		res = string(r[:255])
	}
	principal := "public"
	if p, ok := args["@dbprincipal"].(string); ok {
		principal = p
	}
	return principal + "\x00" + res, true
}

func (x *exec) getAppLock(args map[string]value) Code {
	key, ok := x.resourceKey(args)
	if !ok {
		return CallError
	}
	ms, _ := args["@lockmode"].(string)
	mode, ok := ParseMode(ms)
	if !ok {
		x.fail("The parameter '@LockMode' is incorrect: '%s'; expected Shared, Update, IntentShared, IntentExclusive or Exclusive.", ms)
		return CallError
	}
	o, ok := x.owner(args["@lockowner"], "acquire")
	if !ok {
		return CallError
	}
	timeout := Forever // @@LOCK_TIMEOUT's default, -1
	if v, ok := args["@locktimeout"].(int64); ok && v >= 0 {
		timeout = time.Duration(v) * time.Millisecond
	}
	return x.ss.getAppLock(o, key, mode, timeout)
}

func (x *exec) releaseAppLock(args map[string]value) Code {
	key, ok := x.resourceKey(args)
	if !ok {
		return CallError
	}
	o, ok := x.owner(args["@lockowner"], "release")
	if !ok {
		return CallError
	}
	s := x.ss.srv
	s.mu.Lock()
	code, wakes := s.locks.Release(o, key)
	s.deliver(wakes)
	s.mu.Unlock()
	if code == CallError {
		res, _ := args["@resource"].(string)
		x.fail("Cannot release the application lock (Database Principal: 'public', Resource: '%s') because it is not currently held.", res)
	}
	return code
}

// selectRow answers SELECT with one row.
func (x *exec) selectRow(w []string) {
	var cols []column
	var row []value
	for i := 0; i < len(w); i++ {
		if w[i] == "," {
			continue
		}
		var v value
		text := false
		switch up := strings.ToUpper(w[i]); {
		case up == "@@SPID":
			v = int64(x.ss.spid)
		case (up == "APPLOCK_MODE" || up == "APPLOCK_TEST") && i+1 < len(w) && w[i+1] == "(":
			var fargs []value
			j := i + 2
			for ; j < len(w) && w[j] != ")"; j++ {
				if w[j] != "," {
					fargs = append(fargs, x.value(w[j]))
				}
			}
			i = j
			v, text = x.applockFunc(up, fargs)
			if x.failed {
				return
			}
		default:
			v = x.value(w[i])
			_, text = v.(string)
		}
		name := ""
		if i+2 < len(w) && strings.EqualFold(w[i+1], "AS") {
			name, i = w[i+2], i+2
		}
		cols = append(cols, column{name: name, text: text})
		row = append(row, v)
	}
	x.t.resultSet(cols, row)
	x.t.done(doneMore|doneCount, 1)
}

// applockFunc is APPLOCK_MODE(principal, resource, owner) or
// APPLOCK_TEST(principal, resource, mode, owner).
func (x *exec) applockFunc(fn string, a []value) (value, bool) {
	want := map[string]int{"APPLOCK_MODE": 3, "APPLOCK_TEST": 4}[fn]
	if len(a) != want {
		x.fail("The %s function requires %d argument(s).", fn, want)
		return nil, false
	}
	args := map[string]value{"@dbprincipal": a[0], "@resource": a[1]}
	key, ok := x.resourceKey(args)
	if !ok {
		return nil, false
	}
	o, ok := x.owner(a[len(a)-1], "test")
	if !ok {
		return nil, false
	}
	s := x.ss.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if fn == "APPLOCK_MODE" {
		return s.locks.Mode(o, key).String(), true
	}
	ms, _ := a[2].(string)
	mode, ok := ParseMode(ms)
	if !ok {
		x.fail("The parameter 'lock_mode' of APPLOCK_TEST is incorrect: '%s'.", ms)
		return nil, false
	}
	if s.locks.Test(o, key, mode) {
		return int64(1), false
	}
	return int64(0), false
}

// begin starts a transaction and reports its descriptor (ENVCHANGE 8).
func (ss *session) begin(t *tokens) {
	if ss.tranID != 0 {
		return // nested BEGIN: SQL Server counts @@TRANCOUNT; one level is modelled
	}
	ss.srv.mu.Lock()
	ss.srv.tranSeq++
	ss.tranID = ss.srv.tranSeq
	ss.srv.mu.Unlock()
	t.envChange(8, binary.LittleEndian.AppendUint64(nil, ss.tranID), nil)
}

// finish commits or rolls back: the transaction's locks go (sp_getapplock,
// Remarks), and the client hears the end (ENVCHANGE 9 or 10).
func (ss *session) finish(t *tokens, commit bool) {
	if ss.tranID == 0 {
		return
	}
	old := binary.LittleEndian.AppendUint64(nil, ss.tranID)
	ss.tranID = 0
	s := ss.srv
	s.mu.Lock()
	s.deliver(s.locks.EndTransaction(ss.spid))
	s.mu.Unlock()
	typ := byte(10)
	if commit {
		typ = 9
	}
	t.envChange(typ, nil, old)
}

// rpc runs an RPC request: sp_executesql (by id 10 or by name) or a
// procedure called by name with its parameters.
func (ss *session) rpc(t *tokens, data []byte) error {
	r := &reader{b: data}
	r.allHeaders()
	var proc string
	if n := r.u16(); n == 0xFFFF {
		if id := r.u16(); id == 10 {
			proc = "sp_executesql"
		} else {
			proc = fmt.Sprintf("procedure #%d", id)
		}
	} else {
		proc = fromUCS2(r.take(2 * int(n)))
	}
	r.u16() // option flags
	var names []string
	params := map[string]value{}
	var order []value
	for len(r.b) > 0 && r.err == nil {
		name, v, err := r.param()
		if err != nil {
			return err
		}
		names = append(names, name)
		order = append(order, v)
		if name != "" {
			params[strings.ToLower(name)] = v
		}
	}
	if r.err != nil {
		return r.err
	}
	var x *exec
	if strings.EqualFold(proc, "sp_executesql") {
		stmt, _ := order[0].(string)
		vals := map[string]value{}
		for i := 2; i < len(order); i++ {
			vals[names[i]] = order[i]
		}
		x = ss.batch(t, stmt, vals, true)
	} else {
		x = &exec{ss: ss, t: t, vars: map[string]value{}}
		var positional []value
		args := map[string]value{}
		for i, n := range names {
			if n == "" {
				positional = append(positional, order[i])
			} else {
				args[strings.ToLower(n)] = order[i]
			}
		}
		if code, ok := x.call(proc, args, positional); ok {
			x.status = int32(code)
		}
	}
	t.returnStatus(x.status)
	status := uint16(0)
	if x.failed {
		status = doneError
	}
	t.u8(tokDoneProc)
	t.u16(status)
	t.u16(0xE0)
	t.u64(0)
	return nil
}

// transMgr runs a transaction manager request ([MS-TDS] 2.2.6.9), as
// database/sql's BeginTx, Commit and Rollback send them.
func (ss *session) transMgr(t *tokens, data []byte) error {
	r := &reader{b: data}
	r.allHeaders()
	switch typ := r.u16(); typ {
	case 5: // TM_BEGIN_XACT
		ss.begin(t)
	case 7, 8: // TM_COMMIT_XACT, TM_ROLLBACK_XACT
		ss.finish(t, typ == 7)
	default:
		return fmt.Errorf("tds: transaction manager request %d is not modelled", typ)
	}
	if r.err != nil {
		return r.err
	}
	t.done(0, 0)
	return nil
}

// fenceRow runs the two statements on the fence row: read its version,
// and bump it where it still has the version read (a compare-and-set; the
// rows affected say whether it took). It reports whether w was one.
func (x *exec) fenceRow(w []string) bool {
	text := strings.ToUpper(strings.Join(w, " "))
	s := x.ss.srv
	switch {
	case text == "SELECT VERSION FROM FENCE WHERE ID = 1":
		s.mu.Lock()
		v := s.fence
		s.mu.Unlock()
		x.t.resultSet([]column{{name: "version"}}, []value{v})
		x.t.done(doneMore|doneCount, 1)
	case strings.HasPrefix(text, "UPDATE FENCE SET VERSION = VERSION + 1 WHERE ID = 1 AND VERSION = ") && len(w) == 16:
		want, _ := x.value(w[15]).(int64)
		s.mu.Lock()
		n := uint64(0)
		if s.fence == want {
			s.fence++
			n = 1
		}
		s.mu.Unlock()
		x.t.done(doneMore|doneCount, n)
	default:
		return false
	}
	return true
}
