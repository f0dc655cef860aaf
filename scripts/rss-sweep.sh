#!/usr/bin/env bash
# Worst-case memory and time sweep (issue 25): every accepted input must end,
# with a verdict, in under 1 GB at the default limits (target: under 60 s).
# The sweep builds the CLI, writes scenario files that sit at the largest
# values the default limits accept (1000 clients, 64 nodes, 8000
# connections, 20000 cycles, 1000 faults, 24 h, the smallest timers and the
# most lost messages), adds every built-in scenario, runs each one through
# `locklab run --json` under GNU time and records its peak RSS, wall and
# CPU time, exit status and whether the work budget cut it short.
#
#   bash scripts/rss-sweep.sh              the whole sweep (about 20 minutes
#                                          on two shared cores)
#   bash scripts/rss-sweep.sh PATTERN      only inputs whose name matches
#                                          PATTERN (grep -E)
#   bash scripts/rss-sweep.sh --help       this text
#
# It prints one row per input and, at the end, the worst peak RSS and the
# longest run with their inputs. The inputs and the table stay in the
# directory it names ($LOCKLAB_SWEEP_DIR, or a new temporary one). Exit
# status 1 when a run ends without a verdict (exit status 2, a crash, or
# no JSON) or passes 1 GB; a run past 60 s is flagged, not failed (CPU
# time says what the run costs, wall time also what other jobs take).
set -euo pipefail
cd "$(dirname "$0")/.."

pattern=.
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "scripts/rss-sweep.sh: unknown flag '$arg' (expected a name pattern or --help)" >&2; exit 2 ;;
    *) pattern=$arg ;;
  esac
done
if [ ! -x /usr/bin/time ]; then
  echo "scripts/rss-sweep.sh: needs GNU time at /usr/bin/time (apt-get install time)" >&2
  exit 2
fi

dir=${LOCKLAB_SWEEP_DIR:-$(mktemp -d -t locklab-sweep-XXXXXX)}
mkdir -p "$dir/in"
bin=$dir/locklab
go build -o "$bin" ./cmd/locklab

# ---- inputs -------------------------------------------------------------

# scenario NAME TEXT writes one input file.
scenario() { printf '%s\n' "$2" > "$dir/in/$1.yaml"; }

nodes_for() { # the node list an algorithm needs, and the largest one
  case "$1" in
    redlock|redlock-naive) echo "[A, B, C, D, E]" ;;
    gozk-*) echo "" ;;
    *) echo "[A]" ;;
  esac
}
node_line() { local n; n=$(nodes_for "$1"); [ -n "$n" ] && echo "nodes: $n"; true; }

redis_algorithms="setnx-expire set-nx-px-del set-nx-px-lua reentrant redlock redlock-naive"
# (The single-server zk-simple, zk-queue and zk-queue-naive are retired,
# issue 21: a file naming them runs the gozk-* recipe on one server.)
zk_algorithms="gozk-simple gozk-queue gozk-queue-naive gozk-lock gozk-reentrant"

for alg in $redis_algorithms $zk_algorithms; do
  # The most clients on one key, every cycle the limit allows, no pause.
  scenario "$alg-1000-clients-contention" "id: $alg-1000-clients-contention
algorithm: $alg
ttl: 24h
$(node_line "$alg")
clients: {count: 1000, cycles: 20, work: 0s, think: 0s, start: 0s}
duration: 24h"
  # Every request lost for the whole day: nothing is delivered, the
  # clients retry for ever.
  scenario "$alg-1000-clients-requests-lost" "id: $alg-1000-clients-requests-lost
algorithm: $alg
ttl: 10s
$(node_line "$alg")
clients: {count: 1000, cycles: 20}
duration: 24h
faults:
  - {kind: drop, at: 0s, dir: request}"
  # Every reply lost: every command takes effect and times out.
  scenario "$alg-1000-clients-replies-lost" "id: $alg-1000-clients-replies-lost
algorithm: $alg
ttl: 10s
$(node_line "$alg")
clients: {count: 1000, cycles: 20}
duration: 24h
faults:
  - {kind: drop, at: 0s, dir: reply}"
done

for alg in $redis_algorithms; do
  # 64 nodes × 125 clients: the 8000 connections the limit allows.
  list=$(for i in $(seq 1 64); do printf 'n%d, ' "$i"; done)
  scenario "$alg-64-nodes-125-clients" "id: $alg-64-nodes-125-clients
algorithm: $alg
ttl: 24h
nodes: [${list%, }]
clients: {count: 125, cycles: 160, work: 0s, think: 0s}
duration: 24h"
  # go-redis's own retries with every reply lost (each retry re-sends).
  scenario "$alg-library-retries-replies-lost" "id: $alg-library-retries-replies-lost
algorithm: $alg
ttl: 10s
$(node_line "$alg")
clients: {count: 1000, cycles: 20, library_retries: true}
duration: 24h
faults:
  - {kind: drop, at: 0s, dir: reply}"
done

# A retry loop with no delay over a network with no latency: simulated
# time stops (the same-instant limit).
scenario "set-nx-px-lua-zero-latency-zero-wait" "id: set-nx-px-lua-zero-latency-zero-wait
algorithm: set-nx-px-lua
ttl: 24h
nodes: [A]
wait: {delay: 0s, jitter: 0s}
network: {latency: 0s, jitter: 0s}
clients: {count: 1000, cycles: 20, work: 24h}
duration: 24h"

# 1000 faults of every kind at once on 100 clients.
{
  echo "id: set-nx-px-lua-1000-faults"
  echo "algorithm: set-nx-px-lua"
  echo "ttl: 10s"
  echo "nodes: [A, {name: B, replica_of: A}, {name: T, role: tokens}]"
  echo "params: {fencing: incr}"
  echo "resource: {fencing: \">\"}"
  echo "clients: {count: 100, cycles: 200, work: 0s..1s}"
  echo "duration: 24h"
  echo "faults:"
  for i in $(seq 0 99); do
    at=$((i * 800))s
    c=c$((i % 100 + 1))
    echo "  - {kind: pause, at: $at, target: $c, duration: 30s}"
    echo "  - {kind: clock-jump, at: $at, target: $c, jump: -8760h}"
    echo "  - {kind: drift, at: $at, target: A, ppm: -999999}"
    echo "  - {kind: drop, at: $at, dir: reply, probability: 0.5, duration: 10m}"
    echo "  - {kind: delay, at: $at, dir: request, duration: 1h}"
    echo "  - {kind: partition, at: $at, groups: [[$c], [A]], duration: 1m}"
    echo "  - {kind: node-crash, at: $at, target: A, restart_after: 1s}"
    echo "  - {kind: failover, at: $at, target: B}"
    echo "  - {kind: hang, at: $at, target: $c, duration: 1m}"
    echo "  - {kind: heal, at: $at}"
  done
} > "$dir/in/set-nx-px-lua-1000-faults.yaml"

# A watchdog renewing for 1000 clients whose workers hang for good.
{
  echo "id: set-nx-px-lua-watchdog-1000-hung"
  echo "algorithm: set-nx-px-lua"
  echo "ttl: 1ms"
  echo "params: {watchdog: \"true\"}"
  echo "nodes: [A]"
  echo "clients: {count: 1000, cycles: 20, work: 0s}"
  echo "duration: 24h"
  echo "faults:"
  for i in $(seq 1 1000); do echo "  - {kind: hang, at: 0s, target: c$i}"; done
} > "$dir/in/set-nx-px-lua-watchdog-1000-hung.yaml"

# ZooKeeper at its smallest timers, 1000 clients.
for alg in gozk-simple gozk-queue; do
  scenario "$alg-smallest-timers" "id: $alg-smallest-timers
algorithm: $alg
ttl: 10s
params: {tick_time: 1ms, session_timeout: 2ms, election_time: 1ns, zk_servers: \"5\", sync_limit: \"1\"}
clients: {count: 1000, cycles: 20}
duration: 24h"
  scenario "$alg-server-crashes" "id: $alg-server-crashes
algorithm: $alg
ttl: 10s
params: {zk_servers: \"5\"}
clients: {count: 1000, cycles: 20}
duration: 24h
faults:
$(for i in $(seq 0 199); do echo "  - {kind: node-crash, at: $((i * 400))s, target: zk$((i % 5 + 1)), restart_after: 100s}"; done)"
done

# Every built-in scenario, as shipped.
"$bin" list | awk 'NR > 1 { print $1 }' > "$dir/catalogue.txt"

# ---- runs ---------------------------------------------------------------

table=$dir/sweep.md
echo "| input | exit | peak RSS (MB) | wall (s) | CPU (s) | simulated (s) | stopped | work |" > "$table"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |" >> "$table"
failed=0 worst_rss=0 worst_rss_in="" worst_wall=0 worst_wall_in="" worst_cpu=0 worst_cpu_in=""

run_one() { # NAME ARG
  local name=$1 arg=$2 out=$dir/out/$1 code rss wall user sys cpu sim stopped work verdict
  mkdir -p "$dir/out"
  set +e
  /usr/bin/time -f '%M %e %U %S' -o "$out.time" "$bin" run "$arg" --json > "$out.json" 2> "$out.err"
  code=$?
  set -e
  read -r rss wall user sys < <(tail -n 1 "$out.time")
  # CPU time (user + system) is what the run costs; wall time also counts
  # what other jobs on the machine take from it.
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  # (a grep that finds nothing is no error: an input refused, or a run
  # within its budget, has no such field)
  sim=$({ grep -o '"simulated_seconds": [0-9.e+-]*' "$out.json" || true; } | awk '{print $2}')
  work=$({ grep -o '"work": [0-9]*' "$out.json" || true; } | tail -n 1 | awk '{print $2}')
  stopped=$({ grep -A1 '"stopped"' "$out.json" || true; } | { grep -o '"limit": "[a-z-]*"' || true; } | awk -F'"' '{print $4}')
  verdict=$(grep -c '"mutual_exclusion": "' "$out.json" || true)
  local mb=$((rss / 1024)) note=""
  if [ "$code" -gt 1 ] || [ "$verdict" = 0 ]; then
    note=" NO VERDICT: $(head -c 300 "$out.err" | tr '\n' ' ')"
    failed=1
  fi
  if [ "$mb" -ge 1024 ]; then note="$note OVER 1 GB"; failed=1; fi
  if awk -v c="$cpu" 'BEGIN { exit !(c >= 60) }'; then
    note="$note OVER 60 s of CPU"
  elif awk -v w="$wall" 'BEGIN { exit !(w >= 60) }'; then
    note="$note over 60 s of wall time (under 60 s of CPU: the machine is busy)"
  fi
  echo "| $name | $code | $mb | $wall | $cpu | ${sim:--} | ${stopped:--} | ${work:--} |$note" | tee -a "$table"
  if [ "$mb" -gt "$worst_rss" ]; then worst_rss=$mb worst_rss_in=$name; fi
  if awk -v w="$wall" -v m="$worst_wall" 'BEGIN { exit !(w > m) }'; then worst_wall=$wall worst_wall_in=$name; fi
  if awk -v c="$cpu" -v m="$worst_cpu" 'BEGIN { exit !(c > m) }'; then worst_cpu=$cpu worst_cpu_in=$name; fi
}

for f in "$dir"/in/*.yaml; do
  name=$(basename "$f" .yaml)
  echo "$name" | grep -Eq -- "$pattern" || continue
  run_one "$name" "$f"
done
while read -r id; do
  echo "catalogue:$id" | grep -Eq -- "$pattern" || continue
  run_one "catalogue:$id" "$id"
done < "$dir/catalogue.txt"

echo
echo "worst peak RSS: $worst_rss MB ($worst_rss_in); most CPU: $worst_cpu s ($worst_cpu_in); longest wall time: $worst_wall s ($worst_wall_in)"
echo "inputs, outputs and the table: $dir"
exit "$failed"
