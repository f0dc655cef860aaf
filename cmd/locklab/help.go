package main

const scenarioHelp = `Scenario files (YAML)

A scenario is one file. Durations are Go duration text (250ms, 10s, -2s);
ranges are "min..max" (50ms..150ms) or a single duration.

  id: my-scenario                 # required, a short name
  title: One line shown by 'locklab list'
  algorithm: set-nx-px-lua        # required; see the list below
  ttl: 10s                        # required, the lock's time to live
  key: lock                       # default lock
  wait: {delay: 100ms, jitter: 50ms, attempts: 0}   # retry policy while busy
  params:                         # algorithm settings, all strings:
    drift_factor: "0.01"          #   Redlock's clock drift allowance
    watchdog: "true"              #   renew every ttl/3 while held (Redisson)
    fencing: incr                 #   fencing token from INCR on the tokens node
    fence_start: "32"             #   the counter's value before the run
    validity_from: start          #   start (default) or reply: when the lease begins
    verify_ownership: "true"      #   read the key back when SET NX says busy
    session_timeout: 6s           #   ZooKeeper: the session the clients ask for
    lost_after: 6s                #   ZooKeeper: SUSPENDED turns LOST after this
    guid_protection: "true"       #   zk-queue: find its own node after a lost reply
    stop_on_suspended: "false"    #   zk-queue: stop holding on SUSPENDED, not LOST
    # fencing for zk-queue is "sequence" or "zxid" (the znode's numbers)
  nodes:                          # Redis nodes, by name or in full:
    - A
    - {name: B, replica_of: A, lag: 100ms}   # asynchronous replica
    - {name: C, offset: 0s, ppm: 20000}      # clock offset and rate (2% fast)
    - {name: T, role: tokens}                # hands out fencing tokens only
  clients:
    count: 3                      # clients are named c1..cN
    cycles: 3                     # lock cycles per client
    work: 50ms..150ms             # critical section length
    think: 10ms..50ms             # pause between cycles
    start: 0s..10ms               # start time
    timeout: 50ms                 # go-redis read timeout (client's clock)
    library_retries: false        # keep go-redis default retries
    check_validity: false         # check the lease before the write; once expired, skip it (the hold ends there)
    each: {c1: {start: 0s, work: 2s, cycles: 1, offset: 0s, ppm: 0, library_retries: true}}
  resource: {initial: 100, fencing: none}   # fencing: none, ">" or ">="
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
                                  #   znodes_created, orphaned_znodes)
  narrative: {what: ..., why: ..., fix: ..., sources: [...]}
  twin: other-scenario-id
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
  node-crash  target (node), restart_after, persistence (none|everysec|always)
  failover    target (a replica): promoted to master; clients follow it
  partition   groups: [[c1, A], [B, C]], one_way, duration
  heal        (undoes every partition)

Algorithms: run 'locklab list' to see them in use; the names are
setnx-expire, set-nx-px-del, set-nx-px-lua, reentrant, redlock,
redlock-naive, and the ZooKeeper locks zk-simple and zk-queue.

Errors name the file, the line and the field, and exit with status 2.
`
