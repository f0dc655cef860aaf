package mysqlnode

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// This file is what a statement does. The server knows the user-level
// lock functions, CONNECTION_ID(), a few system variables, the SET,
// BEGIN/COMMIT/ROLLBACK statements drivers and pools send, and one
// table, fence, with one row (version, value): the fencing row. Anything
// else is refused with ER_NOT_SUPPORTED_YET, naming the statement.

// parse reads one statement with vitess's MySQL grammar.
func parse(query string) (st sqlparser.Statement, err error) {
	defer func() {
		// vitess's parser panics on some malformed text (found by
		// FuzzStatement: SELECT''A); that is a syntax error too.
		if recover() != nil {
			st, err = nil, syntaxError(query)
		}
	}()
	st, err = sqlparser.Parse(query)
	if err != nil {
		return nil, syntaxError(query)
	}
	return st, nil
}

func syntaxError(query string) error {
	near := query
	if len(near) > 80 {
		near = near[:80]
	}
	return sqlError(1064, "42000", "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '%s' at line 1", near)
}

func notSupported(st sqlparser.SQLNode) error {
	return sqlError(1235, "42000", "This version of MariaDB doesn't yet support 'locklab: %s'", sqlparser.String(st))
}

// fieldsOf is the result columns a prepared statement announces.
func fieldsOf(st sqlparser.Statement) []*querypb.Field {
	sel, ok := st.(*sqlparser.Select)
	if !ok {
		return nil
	}
	var fields []*querypb.Field
	for _, se := range sel.SelectExprs {
		name, typ := "?", querypb.Type_INT64
		if ae, ok := se.(*sqlparser.AliasedExpr); ok {
			name = columnName(ae)
			if v, ok := ae.Expr.(*sqlparser.SQLVal); ok && v.Type == sqlparser.StrVal {
				typ = querypb.Type_VARCHAR
			}
		}
		fields = append(fields, &querypb.Field{Name: name, Type: typ})
	}
	return fields
}

func columnName(ae *sqlparser.AliasedExpr) string {
	if !ae.As.IsEmpty() {
		return ae.As.String()
	}
	if ae.InputExpression != "" {
		return ae.InputExpression
	}
	return sqlparser.String(ae.Expr)
}

// executor runs the statements of one session.
type executor struct {
	srv   *Server
	ss    *session
	binds map[string]*querypb.BindVariable
}

func (e *executor) statement(st sqlparser.Statement) (*sqltypes.Result, error) {
	switch st := st.(type) {
	case *sqlparser.Select:
		if len(st.From) > 0 {
			return e.fenceRead(st)
		}
		return e.selectExprs(st)
	case *sqlparser.Set:
		return e.set(st)
	case *sqlparser.Begin, *sqlparser.Commit, *sqlparser.Rollback:
		// User-level locks are not transactional: transactions change
		// nothing here.
		return &sqltypes.Result{}, nil
	case *sqlparser.Update:
		return e.fenceWrite(st)
	case *sqlparser.Kill:
		return e.kill(st)
	}
	return nil, notSupported(st)
}

// kind is a value's SQL type as far as the lock functions care.
type kind int

const (
	kNull kind = iota
	kString
	kInt    // an integer literal
	kBigint // an integer parameter
	kDecimal
	kDouble
)

var kindName = map[kind]string{kInt: "int", kBigint: "bigint", kDecimal: "decimal", kDouble: "double"}

type value struct {
	kind kind
	text string // the string, or the number's text
}

func (v value) null() bool { return v.kind == kNull }

// number converts as MariaDB does for a numeric argument: a string's
// leading number, else 0.
func (v value) number() float64 {
	s := strings.TrimSpace(v.text)
	for end := len(s); end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return f
		}
	}
	return 0
}

func (e *executor) selectExprs(sel *sqlparser.Select) (*sqltypes.Result, error) {
	res := &sqltypes.Result{}
	var row []sqltypes.Value
	for _, se := range sel.SelectExprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			return nil, notSupported(sel)
		}
		v, err := e.expr(ae.Expr)
		if err != nil {
			return nil, err
		}
		f := &querypb.Field{Name: columnName(ae), Type: querypb.Type_INT64}
		switch v.kind {
		case kNull:
			row = append(row, sqltypes.NULL)
		case kString:
			f.Type = querypb.Type_VARCHAR
			row = append(row, sqltypes.NewVarChar(v.text))
		case kDecimal, kDouble:
			f.Type = querypb.Type_FLOAT64
			row = append(row, sqltypes.MakeTrusted(querypb.Type_FLOAT64, []byte(v.text)))
		default:
			row = append(row, sqltypes.MakeTrusted(querypb.Type_INT64, []byte(v.text)))
		}
		res.Fields = append(res.Fields, f)
	}
	res.Rows = [][]sqltypes.Value{row}
	return res, nil
}

func (e *executor) expr(x sqlparser.Expr) (value, error) {
	switch x := x.(type) {
	case *sqlparser.NullVal:
		return value{}, nil
	case *sqlparser.ParenExpr:
		return e.expr(x.Expr)
	case *sqlparser.SQLVal:
		return e.literal(x)
	case *sqlparser.UnaryExpr:
		v, err := e.expr(x.Expr)
		if err != nil || x.Operator != "-" || v.kind == kNull {
			if err == nil && x.Operator != "-" && x.Operator != "+" {
				err = notSupported(x)
			}
			return v, err
		}
		if v.kind == kString {
			v = value{kind: kDouble, text: strconv.FormatFloat(v.number(), 'g', -1, 64)}
		}
		if strings.HasPrefix(v.text, "-") {
			v.text = v.text[1:]
		} else {
			v.text = "-" + v.text
		}
		return v, nil
	case *sqlparser.ColName:
		return e.variable(x.Name.String())
	case *sqlparser.FuncExpr:
		return e.call(x)
	}
	return value{}, notSupported(x)
}

func (e *executor) literal(x *sqlparser.SQLVal) (value, error) {
	switch x.Type {
	case sqlparser.StrVal:
		return value{kind: kString, text: string(x.Val)}, nil
	case sqlparser.IntVal:
		return value{kind: kInt, text: string(x.Val)}, nil
	case sqlparser.FloatVal:
		if strings.ContainsAny(string(x.Val), "eE") {
			return value{kind: kDouble, text: string(x.Val)}, nil
		}
		return value{kind: kDecimal, text: string(x.Val)}, nil
	case sqlparser.HexVal:
		b, err := hex.DecodeString(string(x.Val))
		if err != nil {
			return value{}, notSupported(x)
		}
		return value{kind: kString, text: string(b)}, nil
	case sqlparser.ValArg:
		bv := e.binds[strings.TrimPrefix(string(x.Val), ":")]
		if bv == nil {
			return value{}, sqlError(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute")
		}
		v, err := sqltypes.BindVariableToValue(bv)
		if err != nil {
			return value{}, sqlError(1210, "HY000", "Incorrect arguments to mysqld_stmt_execute")
		}
		switch {
		case v.IsNull():
			return value{}, nil
		case v.IsIntegral():
			return value{kind: kBigint, text: v.ToString()}, nil
		case v.IsFloat():
			return value{kind: kDouble, text: v.ToString()}, nil
		}
		return value{kind: kString, text: v.ToString()}, nil
	}
	return value{}, notSupported(x)
}

// variable reads a system variable (@@name, @@session.name).
func (e *executor) variable(name string) (value, error) {
	v := strings.ToLower(name)
	v = strings.TrimPrefix(v, "@@")
	v = strings.TrimPrefix(strings.TrimPrefix(v, "session."), "global.")
	switch v {
	case "max_allowed_packet":
		return value{kind: kInt, text: "16777216"}, nil
	case "wait_timeout":
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		return value{kind: kInt, text: strconv.FormatInt(int64(e.ss.waitTimeout/time.Second), 10)}, nil
	case "version":
		return value{kind: kString, text: strings.TrimPrefix(Version, "5.5.5-")}, nil
	}
	if strings.HasPrefix(name, "@@") {
		return value{}, sqlError(1193, "HY000", "Unknown system variable '%s'", strings.TrimPrefix(name, "@@"))
	}
	return value{}, sqlError(1054, "42S22", "Unknown column '%s' in 'SELECT'", name)
}

// call evaluates a function. The lock functions follow MariaDB 10.11's
// Item_func_get_lock and friends (sql/item_func.cc).
func (e *executor) call(f *sqlparser.FuncExpr) (value, error) {
	written := f.Name.String()
	arity := map[string]int{"get_lock": 2, "release_lock": 1, "is_used_lock": 1, "is_free_lock": 1, "release_all_locks": 0, "connection_id": 0}
	want, known := arity[strings.ToLower(written)]
	if !known {
		e.srv.mu.Lock()
		schema := e.ss.schema
		e.srv.mu.Unlock()
		if schema != "" {
			written = schema + "." + written
		}
		return value{}, sqlError(1305, "42000", "FUNCTION %s does not exist", written)
	}
	if len(f.Exprs) != want {
		return value{}, sqlError(1582, "42000", "Incorrect parameter count in the call to native function '%s'", written)
	}
	args := make([]value, len(f.Exprs))
	for i, se := range f.Exprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			return value{}, notSupported(f)
		}
		v, err := e.expr(ae.Expr)
		if err != nil {
			return value{}, err
		}
		args[i] = v
	}
	if want > 0 {
		// The name's type is checked when the statement is prepared
		// (Item_func's check_argument_types): a number is refused.
		if t, bad := kindName[args[0].kind]; bad {
			return value{}, sqlError(4079, "HY000", "Illegal parameter data type %s for operation '%s'", t, strings.ToLower(written))
		}
	}
	srv, id := e.srv, e.ss.id
	switch strings.ToLower(written) {
	case "connection_id":
		return intValue(int64(id)), nil
	case "release_all_locks":
		srv.mu.Lock()
		defer srv.mu.Unlock()
		n, grants := srv.table.ReleaseAll(id)
		srv.settle(grants)
		return intValue(int64(n)), nil
	case "get_lock":
		return e.getLock(args[0], args[1])
	}
	name, ok, err := lockName(args[0])
	if !ok || err != nil {
		return value{}, err
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	switch strings.ToLower(written) {
	case "release_lock":
		released, exists, grants := srv.table.Release(id, name)
		srv.settle(grants)
		if !exists {
			return value{}, nil
		}
		return boolValue(released), nil
	case "is_used_lock":
		owner, used := srv.table.Owner(name)
		if !used {
			return value{}, nil
		}
		return intValue(int64(owner)), nil
	default: // is_free_lock
		_, used := srv.table.Owner(name)
		return boolValue(!used), nil
	}
}

// lockName checks a lock name as ull_name_ok does: NULL or empty gives
// NULL (ok false), longer than NAME_LEN (64 characters of 3 bytes) is an
// error.
func lockName(v value) (string, bool, error) {
	if v.null() || v.text == "" {
		return "", false, nil
	}
	if len(v.text) > 192 {
		shown := v.text
		if len(shown) > 100 {
			// my_vsnprintf's %-.100T: 100 characters, the last three
			// of them "..." when the text was cut.
			shown = shown[:97] + "..."
		}
		return "", false, sqlError(1059, "42000", "Identifier name '%s' is too long", shown)
	}
	return v.text, true, nil
}

// getLock is GET_LOCK(name, timeout). A NULL or negative timeout (after
// truncation to an integer: -0.5 is a zero timeout) gives NULL and warning
// 1411; a zero timeout never waits; otherwise the session waits up to
// timeout seconds of the server's clock.
func (e *executor) getLock(nameArg, timeoutArg value) (value, error) {
	srv, ss := e.srv, e.ss
	secs := timeoutArg.number()
	if timeoutArg.null() || math.Trunc(secs) < 0 {
		srv.mu.Lock()
		ss.warnings++
		srv.mu.Unlock()
		return value{}, nil
	}
	name, ok, err := lockName(nameArg)
	if !ok || err != nil {
		return value{}, err
	}
	timeout := time.Duration(math.Min(secs, 1e9) * float64(time.Second))
	srv.mu.Lock()
	switch srv.table.Acquire(ss.id, name, srv.cfg.Clock.Now(), timeout) {
	case Granted:
		srv.mu.Unlock()
		return intValue(1), nil
	case TimedOut:
		srv.mu.Unlock()
		return intValue(0), nil
	case Deadlock:
		srv.mu.Unlock()
		return value{}, sqlError(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction")
	}
	wake := make(chan int, 1)
	ss.wake = wake
	srv.settle(nil)
	srv.mu.Unlock()
	var r int
	select {
	case r = <-wake:
	case <-ss.gone:
		// The client went away while waiting: the wait is withdrawn
		// at once, unless the lock was granted in the meantime (then
		// the session's end releases it).
		srv.mu.Lock()
		if srv.table.CancelWait(ss.id) {
			srv.settle(nil)
			r = killed
		} else {
			r = <-wake
		}
		srv.mu.Unlock()
	}
	switch r {
	case killedQuery:
		return value{}, nil
	case killed:
		return value{}, sqlError(1927, "70100", "Connection was killed")
	default:
		return intValue(int64(r)), nil
	}
}

func intValue(n int64) value { return value{kind: kInt, text: strconv.FormatInt(n, 10)} }

func boolValue(b bool) value {
	if b {
		return intValue(1)
	}
	return intValue(0)
}

// set accepts what drivers and pools send (SET NAMES, SET autocommit,
// SET SESSION ...) and sets the session's wait_timeout.
func (e *executor) set(st *sqlparser.Set) (*sqltypes.Result, error) {
	for _, x := range st.Exprs {
		name := strings.ToLower(x.Name.Name.String())
		name = strings.TrimPrefix(strings.TrimPrefix(name, "@@"), "session.")
		if name != "wait_timeout" {
			continue
		}
		v, err := e.expr(x.Expr)
		if err != nil {
			return nil, err
		}
		secs := int64(math.Max(1, math.Min(v.number(), 31536000))) // MariaDB's range
		e.srv.mu.Lock()
		e.ss.waitTimeout = time.Duration(secs) * time.Second
		e.srv.mu.Unlock()
	}
	return &sqltypes.Result{}, nil
}

// fenceRead is SELECT over the fencing row (columns id, version, value).
func (e *executor) fenceRead(sel *sqlparser.Select) (*sqltypes.Result, error) {
	if !isFence(sel.From) {
		return nil, notSupported(sel)
	}
	version, val := e.srv.Fence()
	res := &sqltypes.Result{}
	var row []sqltypes.Value
	for _, se := range sel.SelectExprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok {
			return nil, notSupported(sel)
		}
		col, ok := ae.Expr.(*sqlparser.ColName)
		if !ok {
			return nil, notSupported(sel)
		}
		var n int64
		switch strings.ToLower(col.Name.String()) {
		case "id":
			n = 1
		case "version":
			n = version
		case "value":
			n = val
		default:
			return nil, sqlError(1054, "42S22", "Unknown column '%s' in 'SELECT'", col.Name.String())
		}
		res.Fields = append(res.Fields, &querypb.Field{Name: columnName(ae), Type: querypb.Type_INT64})
		row = append(row, sqltypes.NewInt64(n))
	}
	res.Rows = [][]sqltypes.Value{row}
	return res, nil
}

// fenceWrite is the fenced write: UPDATE fence SET version = version + 1,
// value = V WHERE version = W. It is accepted (1 row affected) only if
// the row's version is still W, the version its writer read when it took
// the lock; a write without a version condition is accepted always (an
// unfenced write).
func (e *executor) fenceWrite(up *sqlparser.Update) (*sqltypes.Result, error) {
	if !isFence(up.TableExprs) {
		return nil, notSupported(up)
	}
	var newValue *int64
	for _, a := range up.Exprs {
		switch strings.ToLower(a.Name.Name.String()) {
		case "value":
			v, err := e.expr(a.Expr)
			if err != nil {
				return nil, err
			}
			n := int64(v.number())
			newValue = &n
		case "version":
			// Always version + 1: the version counts accepted writes.
		default:
			return nil, sqlError(1054, "42S22", "Unknown column '%s' in 'SET'", a.Name.Name.String())
		}
	}
	var expect *int64
	if up.Where != nil {
		err := sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
			c, ok := n.(*sqlparser.ComparisonExpr)
			if !ok || c.Operator != sqlparser.EqualStr {
				return true, nil
			}
			if col, ok := c.Left.(*sqlparser.ColName); ok && strings.EqualFold(col.Name.String(), "version") {
				v, err := e.expr(c.Right)
				if err != nil {
					return false, err
				}
				n := int64(v.number())
				expect = &n
			}
			return true, nil
		}, up.Where)
		if err != nil {
			return nil, err
		}
	}
	if !e.srv.fence.update(expect, newValue) {
		return &sqltypes.Result{Info: "Rows matched: 0  Changed: 0  Warnings: 0"}, nil
	}
	return &sqltypes.Result{RowsAffected: 1, Info: "Rows matched: 1  Changed: 1  Warnings: 0"}, nil
}

func isFence(from sqlparser.TableExprs) bool {
	if len(from) != 1 {
		return false
	}
	at, ok := from[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return false
	}
	tn, ok := at.Expr.(sqlparser.TableName)
	return ok && strings.EqualFold(tn.Name.String(), "fence")
}

// kill is KILL [CONNECTION | QUERY] id.
func (e *executor) kill(k *sqlparser.Kill) (*sqltypes.Result, error) {
	v, err := e.expr(k.ConnID)
	if err != nil {
		return nil, err
	}
	id := Session(uint32(v.number()))
	var found bool
	if k.Connection {
		found = e.srv.Kill(id)
	} else {
		found = e.srv.KillQuery(id)
	}
	if !found {
		return nil, sqlError(1094, "HY000", "Unknown thread id: %d", uint64(v.number()))
	}
	return &sqltypes.Result{}, nil
}
