package pgnode

import "testing"

// FuzzParseStatement: no query text makes the parser panic or hang, and
// every refusal is a Postgres-style error with a SQLSTATE.
func FuzzParseStatement(f *testing.F) {
	for _, q := range []string{
		"SELECT pg_advisory_lock($1)", "select pg_try_advisory_lock( -'42' )",
		"UPDATE fence SET token = $1 WHERE token < $1", "BEGIN; COMMIT",
		"SELECT pg_advisory_lock((($1::bigint)))", "'", "$", "SELECT - -1", "SELECT token FROM fence",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		_, err := ParseStatement(q)
		if err == nil {
			return
		}
		if e, ok := err.(*SQLError); !ok || len(e.Code) != 5 {
			t.Fatalf("%q: error without a SQLSTATE: %v", q, err)
		}
	})
}
