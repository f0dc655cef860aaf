package scenarios

import (
	"fmt"
	"strconv"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/mysqllock" // registers mysql-get-lock
	"github.com/locklab/locklab/faults"
)

// The MySQL backend: the real go-sql-driver/mysql and database/sql
// (unmodified) against simulated MariaDB servers (sim/mysqlnode) on the
// simulated network (sim/dbnet), in the bubble runtime. Hosts, which
// fault schedules name:
//
//	db1   the server; with nodes: 2, the first node of a multi-primary
//	      cluster (Galera)
//	db2   the second node (nodes: 2): named locks are local to a node,
//	      so db2 grants the names db1 has granted
//	app   the service process whose one database/sql pool all clients
//	      share (shared_pool: true): the clients are its workers
//
// Params:
//
//	nodes: 1               1, or 2 for a multi-primary cluster
//	route: spread          spread: client i dials node (i-1) mod nodes;
//	                       first: every client dials db1 (a single lock node)
//	shared_pool: false     one *sql.DB for all clients (one service's workers)
//	own_pool: c4           clients with a pool of their own even so (another
//	                       service, a cron job)
//	wait_timeout: 8h       the servers' wait_timeout (MariaDB's default 28800 s)
//	keepalive_idle: 2h     TCP keepalive of the servers' sockets (Linux defaults)
//	keepalive_interval: 75s
//	keepalive_count: 9
func init() {
	b := BackendInfo{Name: mysqllock.Backend, Hosts: mysqlHostNames, Crashable: true}
	b.Params = append([]algorithms.Param{
		{Name: "nodes", Expect: "1 or 2", Check: algorithms.OneOf("1", "2")},
		{Name: "route", Expect: "spread or first", Check: algorithms.OneOf("spread", "first")},
		{Name: "shared_pool", Expect: "true or false", Check: algorithms.BoolParam},
		{Name: "own_pool", Expect: "client names, comma-separated, such as c4"},
		{Name: "wait_timeout", Expect: "a whole number of seconds between 1s and 8760h, such as 10s", Check: func(v string) error {
			if d, err := faults.ParseDuration(v); err != nil || d.D() < time.Second || d.D() > 365*24*time.Hour || d.D()%time.Second != 0 {
				return fmt.Errorf("expected a whole number of seconds between 1s and 8760h, such as 10s")
			}
			return nil
		}},
	}, keepaliveParams()...)
	b.Metrics = []string{"db_segments"}
	b.Check = func(s *Scenario, bad func(field, format string, args ...any)) {
		checkClientList(s, "own_pool", bad)
	}
	RegisterBackend(b)
}

// MySQLNodes is the number of MySQL nodes, 1 or 2 (params.nodes).
func MySQLNodes(sc *Scenario) int {
	if sc.Params["nodes"] == "2" {
		return 2
	}
	return 1
}

// MySQLSharedPool says every client shares one pool (params.shared_pool).
func MySQLSharedPool(sc *Scenario) bool {
	on, _ := strconv.ParseBool(sc.Params["shared_pool"])
	return on
}

func mysqlHostNames(sc *Scenario) []string {
	out := []string{"db1"}
	if MySQLNodes(sc) == 2 {
		out = append(out, "db2")
	}
	if MySQLSharedPool(sc) {
		out = append(out, "app")
	}
	return out
}
