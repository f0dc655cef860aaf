package pgnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
)

// This file is the wire protocol of one backend (PG15 manual, chapter 55),
// framed by pgx's pgproto3.Backend: startup without authentication, the
// simple query protocol, and the extended protocol the way pgx drives it
// (Parse/Describe/Sync to prepare, Bind/Describe/Execute/Sync to run).

// Serve runs one client connection until the client terminates or the
// connection fails, then ends the session (releasing its locks) and closes
// conn. It returns nil for an orderly end.
func (s *Server) Serve(conn net.Conn) error {
	defer conn.Close()
	be := pgproto3.NewBackend(conn, conn)
	ss := s.openSession()
	defer ss.end()
	if err := startup(conn, be, ss); err != nil {
		return err
	}
	b := &backend{be: be, ss: ss, statements: map[string]Statement{}, portals: map[string]portal{}}
	return b.run()
}

// startup answers SSL and GSS encryption requests with 'N' (the simulated
// network is plaintext) and accepts any user with AuthenticationOk, as
// pg_hba's trust method does.
func startup(conn net.Conn, be *pgproto3.Backend, ss *session) error {
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			if _, err := conn.Write([]byte{'N'}); err != nil {
				return err
			}
			continue
		case *pgproto3.CancelRequest:
			// A cancel connection carries only the request; the session
			// opened for it ends at once and holds nothing.
			if len(m.SecretKey) == 4 {
				ss.srv.cancel(m.ProcessID, binary.BigEndian.Uint32(m.SecretKey))
			}
			return nil
		case *pgproto3.StartupMessage:
		}
		be.Send(&pgproto3.AuthenticationOk{})
		for _, p := range [][2]string{
			{"server_version", "15.0 (locklab)"},
			{"server_encoding", "UTF8"},
			{"client_encoding", "UTF8"},
			{"DateStyle", "ISO, MDY"},
			{"integer_datetimes", "on"},
			{"standard_conforming_strings", "on"},
			{"TimeZone", "UTC"},
		} {
			be.Send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
		}
		secret := make([]byte, 4)
		binary.BigEndian.PutUint32(secret, secretKey(ss.id))
		be.Send(&pgproto3.BackendKeyData{ProcessID: uint32(ss.id), SecretKey: secret})
		be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
		return be.Flush()
	}
}

type portal struct {
	st      Statement
	params  []*int64
	formats []int16 // result format codes as Bind gave them
}

type backend struct {
	be         *pgproto3.Backend
	ss         *session
	statements map[string]Statement
	portals    map[string]portal
	// After an error the extended protocol discards messages up to Sync.
	skipToSync bool
	syncFailed bool // an error since the last Sync: the implicit transaction aborts
}

func (b *backend) run() error {
	for {
		msg, err := b.be.Receive()
		if err != nil {
			return nil // the client went away: the session ends (Serve)
		}
		if _, ok := msg.(*pgproto3.Terminate); ok {
			return nil
		}
		if err := b.handle(msg); err != nil {
			return err
		}
	}
}

func (b *backend) handle(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Query:
		b.simpleQuery(m.String)
		return b.ready()
	case *pgproto3.Sync:
		b.skipToSync = false
		b.ss.endImplicit(!b.syncFailed)
		b.syncFailed = false
		return b.ready()
	case *pgproto3.Flush:
		return b.be.Flush()
	}
	if b.skipToSync {
		return nil
	}
	var err error
	switch m := msg.(type) {
	case *pgproto3.Parse:
		err = b.parse(m)
	case *pgproto3.Bind:
		err = b.bind(m)
	case *pgproto3.Describe:
		err = b.describe(m)
	case *pgproto3.Execute:
		err = b.execute(m)
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			delete(b.statements, m.Name)
		} else {
			delete(b.portals, m.Name)
		}
		b.be.Send(&pgproto3.CloseComplete{})
	default:
		err = &SQLError{Code: "08P01", Message: fmt.Sprintf("unsupported frontend message type %T", msg)}
	}
	if err != nil {
		var ran ranError
		if errors.As(err, &ran) {
			// The statement ran and failed: the session has recorded the
			// failure already (exec), and a second Fail would report the
			// block's abort instead of the statement's own error.
			b.sendError(ran.err)
		} else {
			b.sendError(b.ss.Fail(err))
		}
		b.skipToSync, b.syncFailed = true, true
	}
	return nil
}

func (b *backend) ready() error {
	b.be.Send(&pgproto3.ReadyForQuery{TxStatus: b.ss.txStatus()})
	return b.be.Flush()
}

// simpleQuery runs each statement of a Query message in turn, in text
// format, stopping at the first error; outside a block the whole message
// is one implicit transaction.
func (b *backend) simpleQuery(q string) {
	parts := SplitStatements(q)
	ok, ran := true, false
	for _, toks := range parts {
		if len(toks) == 0 {
			continue
		}
		ran = true
		st, err := parseTokens(toks, len(q))
		var res result
		if err == nil {
			res, err = b.ss.exec(st, nil)
			b.discarded(st, err)
		} else {
			err = b.ss.Fail(err)
		}
		if err != nil {
			b.sendError(err)
			ok = false
			break
		}
		if res.row {
			b.be.Send(rowDescription(res.column, res.oid, nil))
			b.be.Send(&pgproto3.DataRow{Values: [][]byte{encode(res, pgproto3.TextFormat)}})
		}
		b.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tag)})
	}
	if !ran {
		b.be.Send(&pgproto3.EmptyQueryResponse{})
	}
	b.ss.endImplicit(ok)
}

func (b *backend) parse(m *pgproto3.Parse) error {
	if _, exists := b.statements[m.Name]; exists && m.Name != "" {
		return &SQLError{Code: "42P05", Message: fmt.Sprintf("prepared statement %q already exists", m.Name)}
	}
	st, err := ParseStatement(m.Query)
	if err != nil {
		return err
	}
	b.statements[m.Name] = st
	b.be.Send(&pgproto3.ParseComplete{})
	return nil
}

func (b *backend) bind(m *pgproto3.Bind) error {
	st, ok := b.statements[m.PreparedStatement]
	if !ok {
		return &SQLError{Code: "26000", Message: fmt.Sprintf("prepared statement %q does not exist", m.PreparedStatement)}
	}
	want := len(paramTypes(st))
	if len(m.Parameters) != want {
		return &SQLError{Code: "08P01", Message: fmt.Sprintf("bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), m.PreparedStatement, want)}
	}
	params := make([]*int64, len(m.Parameters))
	for i, raw := range m.Parameters {
		if raw == nil {
			continue
		}
		v, err := decodeInt(raw, formatAt(m.ParameterFormatCodes, i))
		if err != nil {
			return err
		}
		params[i] = &v
	}
	formats := append([]int16(nil), m.ResultFormatCodes...)
	b.portals[m.DestinationPortal] = portal{st: st, params: params, formats: formats}
	b.be.Send(&pgproto3.BindComplete{})
	return nil
}

func (b *backend) describe(m *pgproto3.Describe) error {
	if m.ObjectType == 'S' {
		st, ok := b.statements[m.Name]
		if !ok {
			return &SQLError{Code: "26000", Message: fmt.Sprintf("prepared statement %q does not exist", m.Name)}
		}
		b.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: paramTypes(st)})
		b.sendRowDescription(st, nil)
		return nil
	}
	p, ok := b.portals[m.Name]
	if !ok {
		return &SQLError{Code: "34000", Message: fmt.Sprintf("portal %q does not exist", m.Name)}
	}
	b.sendRowDescription(p.st, p.formats)
	return nil
}

func (b *backend) sendRowDescription(st Statement, formats []int16) {
	if name, oid, ok := describe(st); ok {
		b.be.Send(rowDescription(name, oid, formats))
		return
	}
	b.be.Send(&pgproto3.NoData{})
}

func (b *backend) execute(m *pgproto3.Execute) error {
	p, ok := b.portals[m.Portal]
	if !ok {
		return &SQLError{Code: "34000", Message: fmt.Sprintf("portal %q does not exist", m.Portal)}
	}
	res, err := b.ss.exec(p.st, p.params)
	b.discarded(p.st, err)
	if err != nil {
		return ranError{err}
	}
	if p.st.Kind == StmtEmpty {
		b.be.Send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	if res.row {
		b.be.Send(&pgproto3.DataRow{Values: [][]byte{encode(res, formatAt(p.formats, 0))}})
	}
	b.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tag)})
	return nil
}

// ranError is the error of a statement exec ran: the session already
// knows it failed.
type ranError struct{ err error }

func (e ranError) Error() string { return e.err.Error() }

// discarded applies the rest of DISCARD ALL after the session ran it:
// DEALLOCATE ALL drops the named prepared statements (the unnamed one is
// not in that table: prepare.c DropAllPreparedStatements), so a client
// whose statement cache survived the reset — a pooler's client — gets
// "prepared statement does not exist".
func (b *backend) discarded(st Statement, err error) {
	if st.Kind != StmtDiscardAll || err != nil {
		return
	}
	for name := range b.statements {
		if name != "" {
			delete(b.statements, name)
		}
	}
}

func (b *backend) sendError(err error) {
	var e *SQLError
	if !errors.As(err, &e) {
		e = &SQLError{Code: "XX000", Message: err.Error()}
	}
	b.be.Send(&pgproto3.ErrorResponse{
		Severity: "ERROR", SeverityUnlocalized: "ERROR",
		Code: e.Code, Message: e.Message, Hint: e.Hint, Position: int32(e.Position),
	})
}

// formatAt applies the protocol's format-code rule: none means text, one
// applies to all columns, otherwise one per column.
func formatAt(codes []int16, i int) int16 {
	switch len(codes) {
	case 0:
		return pgproto3.TextFormat
	case 1:
		return codes[0]
	}
	if i < len(codes) {
		return codes[i]
	}
	return pgproto3.TextFormat
}

func rowDescription(name string, oid uint32, formats []int16) *pgproto3.RowDescription {
	size := map[uint32]int16{oidBool: 1, oidInt4: 4, oidInt8: 8, oidVoid: 4}[oid]
	return &pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{
		Name: []byte(name), DataTypeOID: oid, DataTypeSize: size, TypeModifier: -1,
		Format: formatAt(formats, 0),
	}}}
}

// encode writes one result value in text or binary format (the types'
// *out and *send functions: boolout "t"/"f", int8send big-endian, void
// empty).
func encode(res result, format int16) []byte {
	if res.null {
		return nil
	}
	if format == pgproto3.BinaryFormat {
		switch res.oid {
		case oidBool:
			return []byte{byte(res.value)}
		case oidInt4:
			return binary.BigEndian.AppendUint32(nil, uint32(int32(res.value)))
		case oidInt8:
			return binary.BigEndian.AppendUint64(nil, uint64(res.value))
		}
		return []byte{}
	}
	switch res.oid {
	case oidBool:
		if res.value != 0 {
			return []byte("t")
		}
		return []byte("f")
	case oidVoid:
		return []byte{}
	}
	return []byte(strconv.FormatInt(res.value, 10))
}

// decodeInt reads an integer parameter: text is decimal, binary is a
// big-endian int2, int4 or int8 as its length says.
func decodeInt(raw []byte, format int16) (int64, error) {
	if format == pgproto3.BinaryFormat {
		switch len(raw) {
		case 2:
			return int64(int16(binary.BigEndian.Uint16(raw))), nil
		case 4:
			return int64(int32(binary.BigEndian.Uint32(raw))), nil
		case 8:
			return int64(binary.BigEndian.Uint64(raw)), nil
		}
		return 0, &SQLError{Code: "22P03", Message: fmt.Sprintf("incorrect binary data format in bind parameter (%d bytes)", len(raw))}
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, &SQLError{Code: "22P02", Message: fmt.Sprintf("invalid input syntax for type bigint: %q", string(raw))}
	}
	return v, nil
}
