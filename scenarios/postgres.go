package scenarios

import (
	"slices"
	"strconv"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/pglock" // registers the pg-* algorithms
)

// The Postgres backend: the real pgx driver (unmodified) against
// simulated Postgres servers (sim/pgnode) on the simulated network
// (sim/dbnet), in the bubble runtime. Hosts, which fault schedules name:
//
//	db1        the primary; clients dial it through the address "primary"
//	db2        a standby (params.standby: true) with none of the primary's
//	           advisory locks (they are not replicated); a failover fault
//	           targeting db2 points "primary" at it, as Patroni moves the
//	           virtual IP
//	pgbouncer  a pooler between clients and db1 (params.pooler)
//
// Params:
//
//	pooler: none               none, session or transaction (PgBouncer pool_mode)
//	pool_size: 20              server connections per pool (default_pool_size)
//	server_reset_query: DISCARD ALL
//	server_reset_query_always: false
//	server_lifetime: 1h        a server connection older than this is closed on release
//	keepalive_idle: 2h         TCP keepalive of the servers' sockets (Linux defaults:
//	keepalive_interval: 75s    tcp_keepalive_time, _intvl, _probes; Postgres'
//	keepalive_count: 9         tcp_keepalives_* = 0 uses them)
//	standby: false             add db2
//	direct_clients: c5         clients that dial db1 directly, not through
//	                           the pooler (a migration job, a psql session)
//	shared_pool: false         every client (not direct_clients) dials from
//	                           one host, app: the workers of one service
//	                           sharing its connection pool (locktest)
//	pool_max_conns: 4          pgxpool (pg-advisory-pgxpool): MaxConns,
//	pool_max_conn_idle_time: 30m   MaxConnIdleTime and HealthCheckPeriod,
//	pool_health_check_period: 1m   pgxpool's defaults; with the algorithm's
//	                           pool: database/sql, SetMaxOpenConns and
//	                           SetConnMaxIdleTime of a *sql.DB
func init() {
	RegisterBackend(BackendInfo{
		Name:      pglock.Backend,
		Hosts:     postgresHostNames,
		Crashable: true,
		Standbys: func(sc *Scenario) []string {
			if PostgresStandby(sc) {
				return []string{"db2"}
			}
			return nil
		},
		Params: slices.Concat([]algorithms.Param{
			{Name: "pooler", Expect: "none, session or transaction", Check: algorithms.OneOf("none", "session", "transaction")},
			{Name: "pool_size", Expect: "a whole number between 1 and 100", Check: wholeNumber(1, 100, "20")},
			{Name: "server_reset_query", Expect: "DISCARD ALL, SELECT pg_advisory_unlock_all() or empty", Check: algorithms.OneOf("DISCARD ALL", "SELECT pg_advisory_unlock_all()", "")},
			{Name: "server_reset_query_always", Expect: "true or false", Check: algorithms.BoolParam},
			{Name: "server_lifetime", Expect: "a duration such as 1h", Check: durationAtLeast(time.Millisecond, "1h")},
		}, keepaliveParams(), []algorithms.Param{
			{Name: "standby", Expect: "true or false", Check: algorithms.BoolParam},
			{Name: "direct_clients", Expect: "client names, comma-separated, such as c5"},
			{Name: "shared_pool", Expect: "true or false", Check: algorithms.BoolParam},
			{Name: "pool_max_conns", Expect: "a whole number between 1 and 100", Check: wholeNumber(1, 100, "4")},
			{Name: "pool_max_conn_idle_time", Expect: "a duration such as 30m", Check: durationAtLeast(time.Millisecond, "30m")},
			{Name: "pool_health_check_period", Expect: "a duration such as 1m", Check: durationAtLeast(time.Millisecond, "1m")},
		}),
		Metrics: []string{"db_segments", "pooler_server_conns"},
		Check: func(s *Scenario, bad func(field, format string, args ...any)) {
			checkClientList(s, "direct_clients", bad)
		},
	})
}

// PostgresStandby says the scenario adds the standby db2
// (params.standby).
func PostgresStandby(sc *Scenario) bool {
	on, _ := strconv.ParseBool(sc.Params["standby"])
	return on
}

// PostgresPooler is the pooler's pool mode, session or transaction, or ""
// for none (params.pooler).
func PostgresPooler(sc *Scenario) string {
	if m := sc.Params["pooler"]; m == "session" || m == "transaction" {
		return m
	}
	return ""
}

func postgresHostNames(sc *Scenario) []string {
	out := []string{"db1"}
	if PostgresStandby(sc) {
		out = append(out, "db2")
	}
	if PostgresPooler(sc) != "" {
		out = append(out, "pgbouncer")
	}
	if on, _ := strconv.ParseBool(sc.Params["shared_pool"]); on {
		out = append(out, "app")
	}
	return out
}
