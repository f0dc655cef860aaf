#!/usr/bin/env bash
# The project's test command: formatting, vet, the race-enabled test suite,
# the mutation gate (a step of its own) and a bounded fuzz pass. It prints
# how long each step took.
#
#   bash scripts/test.sh           the CI suite: rapid properties from a
#                                  pinned seed, the smallest run counts that
#                                  still assert what each test claims
#   bash scripts/test.sh --deep    the nightly suite: a fresh rapid seed
#                                  (printed; replay with LOCKLAB_RAPID_SEED=N),
#                                  ten times the rapid checks, more seeds and
#                                  runs, and a ten times longer fuzz pass
#   bash scripts/test.sh --help    this text
#
# LOCKLAB_RAPID_SEED=N pins the rapid seed of either suite (package
# sim/proptest reads it).
set -euo pipefail
cd "$(dirname "$0")/.."

deep=0
for arg in "$@"; do
  case "$arg" in
    --deep) deep=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument '$arg' (expected --deep or --help)" >&2; exit 2 ;;
  esac
done

# step NAME CMD... runs one step and prints its wall time.
step() {
  local name=$1 start=$SECONDS
  shift
  echo "==> $name"
  "$@"
  echo "==> $name: $((SECONDS - start)) s"
}

fuzzinputs=50000
if [ "$deep" = 1 ]; then
  export LOCKLAB_DEEP=1
  if [ -z "${LOCKLAB_RAPID_SEED:-}" ]; then
    LOCKLAB_RAPID_SEED=$(( ($(od -An -N6 -tu8 /dev/urandom | tr -d ' ') % 281474976710655) + 1 ))
  fi
  export LOCKLAB_RAPID_SEED
  echo "deep run: rapid seed $LOCKLAB_RAPID_SEED (replay: LOCKLAB_RAPID_SEED=$LOCKLAB_RAPID_SEED bash scripts/test.sh --deep)"
  fuzzinputs=500000
else
  echo "rapid seed: ${LOCKLAB_RAPID_SEED:-20261125 (pinned, sim/proptest.Seed)}"
fi

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then
    echo "gofmt would change:"; echo "$unformatted"; return 1
  fi
}
step gofmt gofmt_check
step "go vet" go vet ./...
# The race pass skips the mutation gate, which runs next as a step of its
# own: the gate's work is building its runner once per mutant and running
# it as a subprocess, so -race on the test binary that drives it buys
# nothing, and alone it overlaps no other package's tests and its time is
# printed. Its step reuses the race pass's test binary from the build cache
# (same flags), so nothing is compiled twice. -timeout is a guard against a
# hang, not a pace. -p 3 on CI's two cores: several packages spend most
# of their time waiting on real servers (sim/differential against
# redis-server, live, the ZooKeeper and database differential tests), and
# with one package per core those waits left a core idle; a third package
# runs in them. Each test's outcome does not depend on the pace (the
# simulations are deterministic; the real-server tests' margins are
# seconds), so this changes when the suite ends, never what it says.
step "go test -race" go test -race -count=1 -p 3 -timeout 30m -skip '^TestMutantsAreKilled$' ./...
step "mutation gate" go test -race -count=1 -timeout 30m -run '^TestMutantsAreKilled$' ./cmd/locklab
# The README's library × fault table (locktest TestLibraryTable)
# runs every library row under every fault class and fails on any verdict
# the table does not show. It skips itself under -race (ten times slower
# there), so without this step CI never checked the table users read.
step "library table" go test -count=1 -timeout 30m -run '^TestLibraryTable$' ./locktest
# A short fuzzing pass over the scenario parser and runner (issue 15); the
# corpus in runner/testdata/fuzz also runs in the normal suite above. It
# is bounded by a count of inputs, not by time: with -fuzztime 20s an input
# still running at the deadline failed the pass ("context deadline
# exceeded") on a busy machine, a result that depended on machine speed.
# -fuzzminimizetime is small because every candidate runs a whole
# simulation: at its default (60s per new input) the pass sat at 0 execs/s
# minimizing instead of executing (issue 25). FuzzCounterexample (the
# counterexample format) and FuzzFlags (command lines) join it; a deep run
# feeds each ten times as many inputs.
step "fuzz FuzzScenario" go test -run '^$' -fuzz '^FuzzScenario$' -fuzztime "${fuzzinputs}x" -fuzzminimizetime 10x ./runner
step "fuzz FuzzCounterexample" go test -run '^$' -fuzz '^FuzzCounterexample$' -fuzztime "$((fuzzinputs / 5))x" -fuzzminimizetime 10x ./runner
step "fuzz FuzzFlags" go test -run '^$' -fuzz '^FuzzFlags$' -fuzztime "$((fuzzinputs / 10))x" -fuzzminimizetime 10x ./cmd/locklab
