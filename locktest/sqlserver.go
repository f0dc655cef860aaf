package locktest

// SQL Server (issue 35): a lock built on a *sql.DB of the unmodified
// github.com/microsoft/go-mssqldb driver ("sqlserver"), connected over the
// simulated network to the simulated SQL Server of sim/mssqlnode — whose
// fidelity rests on Microsoft's documentation, not on a real server
// (docs/sqlserver.md):
//
//	locktest.RunSQL(t, locktest.DriverSQLServer, func(db *sql.DB) locktest.Lock { ... }, opt)
//
// Clients share one pool by default (params shared_pool: true), where a
// Session-owned sp_getapplock taken through the pool is lost when another
// goroutine's query resets the connection (mssql-pooled-session-reset).
// Options.Database.Params takes the backend's params: secondary,
// keepalive_*, pool_max_conns, shared_pool.

import (
	"errors"
	"fmt"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/mssqllock"
)

// DriverSQLServer is go-mssqldb's driver name, to SQL Server.
const DriverSQLServer = "sqlserver"

// customMSSQL is the hidden algorithm a SQL Server lock's runs name.
const customMSSQL = "custom-mssql"

func init() {
	algorithms.Register(algorithms.Info{
		Name:    customMSSQL,
		Summary: "your own lock on the " + mssqllock.Backend + " backend, supplied by a factory in Go (scenarios/locktest)",
		Backend: mssqllock.Backend, Bubble: true, Hidden: true,
		New: func(algorithms.Params, algorithms.Conns) (algorithms.Lock, error) {
			return nil, errors.New("a custom database lock is built by a factory in Go; use package scenarios/locktest")
		},
	})
}

// sqlServerBuilder hands the user's factory the backend's *sql.DB (the
// backend closes it when the run ends).
func sqlServerBuilder(build func(any) Lock) dbBuilder {
	return dbBuilder{open: func(c any, _ Database) (any, func(), error) {
		client, ok := c.(*mssqllock.Client)
		if !ok {
			return nil, nil, fmt.Errorf("locktest: RunSQL: expected a SQL Server client, got %T", c)
		}
		return client.DB, nil, nil
	}, build: build}
}
