package main

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
)

const scenarioHelp = `Scenario files (YAML)

A scenario is one file. Durations are Go duration text (250ms, 10s, -2s);
ranges are "min..max" (50ms..150ms) or a single duration.

  id: my-scenario                 # required, a short name
  title: One line shown by 'locklab list'
  algorithm: set-nx-px-lua        # required; see the list below
  ttl: 10s                        # required, the lock's time to live
  key: lock                       # default lock
  wait: {delay: 100ms, jitter: 50ms, attempts: 0}   # retry policy while busy
  # wait: {backoff: exponential, delay: 100ms, max: 1s}  # delay doubles after
                                  #   each busy try, up to max (default 1s),
                                  #   plus jitter; backoff: fixed is the default
  params:                         # algorithm settings, all strings:
    drift_factor: "0.01"          #   Redlock's clock drift allowance
    watchdog: "true"              #   renew every ttl/3 while held (Redisson)
    token_source: incr            #   where fencing tokens come from: INCR on the
                                  #   tokens node (or table, file; none)
    fence_start: "32"             #   the counter's value before the run
    validity_from: start          #   start (default) or reply: when the lease begins
    verify_ownership: "true"      #   read the key back when SET NX says busy
    wait_replicas: "1"            #   SET NX PX locks: WAIT for this many replicas
    wait_timeout: 100ms           #   after acquiring (held only if they acked)
    validity: third-whole-seconds #   redlock-sequential: spec (default) or the
                                  #   wiki's elapsed_ms/1000 <= ttl_s/3, full TTL
    ex_seconds: "true"            #   redlock-sequential: SET NX EX whole seconds
    unlock_on_failure: if-any-granted  # redlock-sequential: every-node (default)
                                  #   or only when some node granted
    # gozk-* algorithms (the real go-zookeeper client, backend
    # zookeeper-ensemble; servers zk1..zkN, client ci dials zk((i-1) mod N + 1);
    # a lease carries its znode's sequence + 1 as its fencing token):
    session_timeout: 6s           #   the session the clients ask for
    zk_servers: "3"               #   1, 3 or 5 servers; zkN leads first
    election_time: 400ms          #   an election, once the leader is lost
    tick_time: 2s                 #   ZooKeeper's tickTime
    sync_limit: "5"               #   ticks before a cut-off server gives up
    apply_lag: zk2=1500ms         #   a server applies commits late (CURATOR-604)
    stop_on_disconnect: "true"    #   stop holding on Disconnected/Expired
    replace_handle_on_lost: "true" #  gozk-queue(-naive), as Curator: LOST after
                                  #   lost_after (default session/3) past
                                  #   Disconnected, then a new handle (CURATOR-604)
    lost_after: 2s                #   with replace_handle_on_lost: that delay
    # mssql-applock-* algorithms (the real go-mssqldb driver against a
    # simulated SQL Server, db1, behind the listener "primary"; see
    # docs/sqlserver.md: modelled from Microsoft's documentation only):
    connection: pinned            #   pool or pinned (mssql-applock-session)
    lock_timeout: "0"             #   @LockTimeout: -1, 0 or milliseconds
    commit: at_release            #   or before_work (mssql-applock-transaction)
    confirm: 200ms                #   ask APPLOCK_MODE that often (pinned only)
    token_source: table           #   token from the fence row (mysql-get-lock too)
    secondary: "true"             #   add db2, an availability-group secondary
                                  #   (a failover fault targeting db2)
    shared_pool: "true"           #   one *sql.DB for all clients (host app)
    pool_max_conns: "1"           #   SetMaxOpenConns of each *sql.DB
    # Files naming the retired single-server zk-simple, zk-queue or
    # zk-queue-naive run the gozk-* recipe of the same name on one server
    # (zk1), with a warning for each name translated. The keys once
    # spelled params.fencing and resource.fencing are read as token_source
    # and token_check, with a warning.
  nodes:                          # Redis nodes, by name or in full:
    - A
    - {name: B, replica_of: A, lag: 100ms}   # asynchronous replica
    - {name: C, offset: 0s, ppm: 20000}      # clock offset and rate (2% fast)
    - {name: T, role: tokens}                # hands out fencing tokens only
    - {name: M, min_replicas_to_write: 1, min_replicas_max_lag: 10s}
                                  # refuse writes (NOREPLICAS) without a replica
  clients:
    count: 3                      # clients are named c1..cN
    cycles: 3                     # lock cycles per client
    work: 50ms..150ms             # critical section length
    think: 10ms..50ms             # pause between cycles, and before the
                                  # application calls again after a lock error
    start: 0s..10ms               # start time
    timeout: 50ms                 # go-redis read timeout (client's clock)
    library_retries: false        # keep go-redis default retries
    check_validity: false         # check the lease before the write; once expired, skip it (the hold ends there)
    reenter: {after: 300ms, hold: 100ms}  # reentrant algorithms only: a nested
                                  # call takes the lock again after 300ms of
                                  # work, holds it 100ms and releases it
    clock: monotonic              # monotonic (time.Since) or wall: the clock
                                  # clients time their leases with
    permits: 2                    # a semaphore's permits (semaphores only)
    mode: read                    # read or write (reader-writer locks only)
    each: {c1: {start: 0s, work: 2s, cycles: 1, offset: 0s, ppm: 0, library_retries: true, clock: wall}}
  resource: {initial: 100, token_check: none}  # how the store checks fencing
                                  # tokens: none, ">" or ">="
                                  # reliable: true spares the store's own reads
                                  # and writes from drop, delay and partition
                                  # faults (what locktest sets by default)
  network: {latency: 500us, jitter: 500us}
  duration: 30s                   # simulated run length
  liveness_bound: 21s             # default 2*ttl+1s
  max_hold: 10s                   # a holder keeping the lock longer counts as stuck
  faults:                         # each fault has a kind and a time:
    - kind: pause                 #   at: 1.5s (true time), or
      target: c1                  #   after: {client: c1, op: SET, dir: reply, nth: 1}
      duration: 15s               #   (fires when that message arrives)
      after: {client: c1, op: READ}
  expect: {mutual_exclusion: violated, resource: violated, liveness: ok}
  at_most: {watch_notifications: 100}   # bounds on backend metrics (ZooKeeper:
                                  #   watch_notifications, sessions_expired,
                                  #   znodes_created, orphaned_znodes; the
                                  #   ensemble: watch_notifications,
                                  #   sessions_expired, elections,
                                  #   zk_client_messages)
  narrative: {what: ..., why: ..., fix: ..., sources: [...]}
  twin: other-scenario-id
  course:                         # the scenario's lesson in 'locklab course':
    objectives: [...]             #   what a student learns
    questions: [...]              #   to discuss
    instructor: [...]             #   notes for the teacher (not on handouts)
    sources: [...]                #   more reading; also predict, edit, try,
                                  #   and outside (why no section lists it)
  seed: 1                         # default seed

Fault kinds and their fields:
  pause       target (client), duration
  crash       target (client)
  hang        target (client), duration (0: for good) — the worker stops,
              its watchdog goes on
  drop        dir (request|reply), client, node, op, count, probability, duration
  delay       the same pattern fields, and duration (the delay added)
  clock-jump  target (client or node), jump (negative jumps backward)
  drift       target (client or node), ppm (rate offset, parts per million)
  node-crash  target (node, or a ZooKeeper server zk1..zkN), restart_after,
              persistence (none|everysec|always; Redis nodes only)
  failover    target (a replica): promoted to master (Sentinel); the other
              replicas follow it, clients that can reach it follow it, the
              old master serves whoever still reaches it and rejoins as a
              replica once it can reach the new master
  partition   groups: [[c1, A], [B, C]], one_way, duration
  heal        (undoes every partition)

{{ALGORITHMS}}
{{PARAMS}}
Checks: the whole file is checked before anything runs. Every key must be
one of the fields above (typos get a did-you-mean), every value its exact
type (count: 2.5 is refused), durations lie in [0, 8760h] unless said
otherwise (ttl 1ms..24h; offsets and jumps ±8760h; wait, network, lag and
timeout up to 1h; work, think and start up to 24h), ppm in (-1000000,
1000000], names resolve against their kind (replica_of names another Redis
node; a fault's op is a Redis command, a ZooKeeper request or READ/WRITE),
params are the ones the algorithm reads, and a field a fault kind does not
use (a probability on a pause) is an error. Every problem of the file is
printed at once, one per line:

  locklab: my.yaml:8:13: faults[0].target: unknown client "c7"; expected one of c1, c2 (did you mean c1?)

and the exit status is 2. Faults that can never fire, or fire and change
nothing (a crash of a node already down, a partition between hosts that
never talk, a clock jump nothing reads afterwards or on a monotonic clock),
are warned about on stderr, as is a clock jump on a client that leaves
clients.clock at its default (now monotonic; it was the wall clock). Limits (clients, nodes, faults, cycles, duration, file size) and
the flags that raise them: 'locklab help run'.
`

// algorithmsPlaceholder marks where scenarioHelpText puts the algorithm
// list: the list is read from the registry, so a new algorithm can never be
// missing from the help (issue 20: it once listed 8 of 14).
const algorithmsPlaceholder = "{{ALGORITHMS}}"

// scenarioHelpText is 'locklab help scenario' with the registered
// algorithms, grouped by backend, in place of the placeholder.
func scenarioHelpText() string {
	var b strings.Builder
	b.WriteString("Algorithms ('locklab list' shows them in use), by backend:\n")
	backends, byBackend := scenarios.AlgorithmsByBackend()
	for _, backend := range backends {
		line := "  " + backend + ":"
		for _, name := range byBackend[backend] {
			if len(line)+1+len(name) > 74 {
				b.WriteString(line + "\n")
				line = "   "
			}
			line += " " + name
		}
		b.WriteString(line + "\n")
	}
	text := strings.Replace(scenarioHelp, algorithmsPlaceholder, b.String(), 1)
	return strings.Replace(text, paramsPlaceholder, paramsHelpText(), 1)
}

// paramsPlaceholder marks where scenarioHelpText puts every param and
// per-client setting the registries declare (issue 31 item 7: the help once
// documented none of the database, semaphore and reader-writer ones).
const paramsPlaceholder = "{{PARAMS}}"

// paramsHelpText lists every param by who reads it, with what a value looks
// like, and the semaphore and reader-writer settings with the algorithms
// that read them; all of it from the registries.
func paramsHelpText() string {
	var b strings.Builder
	b.WriteString("Params (under params:, all strings), by who reads them; a key the\nalgorithm does not read is refused:\n")
	for _, g := range scenarios.ParamGroups() {
		b.WriteString("  " + g.Title + ":\n")
		for _, p := range g.Params {
			b.WriteString(wrapHelp(fmt.Sprintf("    %-26s %s", p.Name, p.Expect), "                               ") + "\n")
		}
	}
	b.WriteString("Semaphore and reader-writer settings, accepted only by the algorithms\nthat read them (elsewhere refused):\n")
	for _, f := range []struct{ field, what, param string }{
		{"clients.permits", "a counting semaphore's permits, >= 1", algorithms.ParamPermits},
		{"clients.mode", "read or write (the default), for every client", algorithms.ParamMode},
		{"clients.each.<c>.mode", "read or write, for one client", algorithms.ParamMode},
	} {
		b.WriteString(wrapHelp(fmt.Sprintf("  %-24s %s; read by %s", f.field, f.what, strings.Join(algorithms.Readers(f.param), ", ")), "                           ") + "\n")
	}
	return b.String()
}

// wrapHelp breaks line at spaces so that no line passes 78 columns, going
// on with indent.
func wrapHelp(line, indent string) string {
	var out []string
	for len(line) > 78 {
		i := strings.LastIndex(line[:79], " ")
		if i <= len(indent) {
			break
		}
		out = append(out, line[:i])
		line = indent + strings.TrimLeft(line[i:], " ")
	}
	return strings.Join(append(out, line), "\n")
}
