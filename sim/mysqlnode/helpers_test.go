package mysqlnode

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// simDB opens an unmodified go-sql-driver/mysql *sql.DB whose connections
// are pipes into srv.
func simDB(t testing.TB, srv *Server) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User = "locklab"
	cfg.DBName = "lab"
	cfg.Net = "tcp"
	cfg.Addr = "mysql-sim:3306"
	cfg.Logger = &mysql.NopLogger{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() { _ = srv.Serve(server) }()
		return client, nil
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// pinned returns one connection of db, closed when the test ends.
func pinned(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// answer runs a query and renders what the client saw: each row's values
// (NULL for SQL NULL), or the error's number, state and message.
func answer(ctx context.Context, q querier, query string, args ...any) string {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return renderErr(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := ""
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "scan: " + err.Error()
		}
		for i, v := range vals {
			if i > 0 {
				out += " "
			}
			if v.Valid {
				out += v.String
			} else {
				out += "NULL"
			}
		}
	}
	if err := rows.Err(); err != nil {
		return renderErr(err)
	}
	return out
}

func renderErr(err error) string {
	if me, ok := err.(*mysql.MySQLError); ok {
		return fmt.Sprintf("ERROR %d (%s): %s", me.Number, string(me.SQLState[:]), me.Message)
	}
	return "error: " + err.Error()
}
