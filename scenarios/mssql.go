package scenarios

import (
	"strconv"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/mssqllock" // registers the mssql-applock-* algorithms
)

// The SQL Server backend (issue 35): the real go-mssqldb driver and
// database/sql (unmodified) against simulated SQL Servers
// (sim/mssqlnode) on the simulated network (sim/dbnet), in the bubble
// runtime. docs/sqlserver.md says what is modelled and from which
// documents; no real SQL Server checks it. Hosts, which fault schedules
// name:
//
//	db1   the primary replica; clients dial it through the availability
//	      group listener's address, "primary"
//	db2   a secondary replica (params.secondary: true); a failover fault
//	      targeting it points the listener at it. It has no application
//	      locks: they live in the old primary's memory and are not
//	      replicated
//	app   the service process whose one database/sql pool all clients
//	      share (shared_pool: true): the clients are its goroutines
//
// Params:
//
//	secondary: false        add db2
//	shared_pool: false      one *sql.DB for all clients, dialling from app
//	keepalive_idle: 30s     TCP keepalive of the server's sockets: SQL
//	keepalive_interval: 1s  Server's KeepAlive (30000 ms) and
//	keepalive_count: 10     KeepAliveInterval (1000 ms), and Windows' 10
//	                        unanswered probes
//	pool_max_conns: 0       SetMaxOpenConns of each client's *sql.DB
//	                        (0: no limit)
func init() {
	b := BackendInfo{Name: mssqllock.Backend, Hosts: mssqlHostNames, Crashable: true}
	b.Standbys = func(sc *Scenario) []string {
		if mssqlSecondary(sc) {
			return []string{"db2"}
		}
		return nil
	}
	b.Params = append([]algorithms.Param{
		{Name: "secondary", Expect: "true or false", Check: algorithms.BoolParam},
		{Name: "shared_pool", Expect: "true or false", Check: algorithms.BoolParam},
		{Name: "pool_max_conns", Expect: "a whole number between 0 and 100", Check: wholeNumber(0, 100, "4")},
	}, keepaliveParams()...)
	b.Metrics = []string{"db_segments"}
	b.Check = func(s *Scenario, bad func(field, format string, args ...any)) {
		if _, ok := s.Params["confirm"]; ok && s.Params["connection"] == "pool" {
			// The check asks on the lock's own session; through a pool
			// it would ask whichever connection is free.
			bad("params.confirm", "the check asks APPLOCK_MODE on the lock's own session, which a pool does not keep; expected connection: pinned, or no confirm")
		}
	}
	RegisterBackend(b)
}

func mssqlSecondary(sc *Scenario) bool {
	on, _ := strconv.ParseBool(sc.Params["secondary"])
	return on
}

// MSSQLSharedPool says every client shares one pool (params.shared_pool).
func MSSQLSharedPool(sc *Scenario) bool {
	on, _ := strconv.ParseBool(sc.Params["shared_pool"])
	return on
}

// MSSQLServerNames are the SQL Server hosts: db1, and db2 with a
// secondary.
func MSSQLServerNames(sc *Scenario) []string {
	if mssqlSecondary(sc) {
		return []string{"db1", "db2"}
	}
	return []string{"db1"}
}

func mssqlHostNames(sc *Scenario) []string {
	out := MSSQLServerNames(sc)
	if MSSQLSharedPool(sc) {
		out = append(out, "app")
	}
	return out
}
