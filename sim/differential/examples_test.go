package differential

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/internal/realredis"
)

// example is one fixed sequence whose replies are known from the Redis
// documentation; both sides must give exactly these (PTTLs within the
// tolerance), which also shows the phase grid does what the package doc
// says: a key set for 1.5 phases is there one phase later and gone two
// phases later, on both sides.
type example struct {
	name  string
	steps []step
	want  []string // one per step; "" for steps without a reply
}

func cmd(args ...string) step     { return step{args: args} }
func ttlCmd(args ...string) step  { return step{args: args, ttl: true} }
func onReplica(s step) step       { s.node = 1; return s }
func wait1() step                 { return step{kind: advanceStep, grid: 1} }
func evalOf(src string) []string  { return []string{"EVAL", src, "1", "lock:a"} }
func evalshaOf(src string) string { return sha1hex(src) }

func runExamples(t *testing.T, cfg simConfig, real *realSide, examples []example) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			got := realRun(t, ex.steps, real.emptied, real.begin, nil)
			simulated, err := runSim(cfg, ex.steps, got.phase, got.grid)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range ex.steps {
				if s.kind != cmdStep {
					continue
				}
				want := got.grid.resolve(ex.want[i])
				if !same(s, got.replies[i], want, got.grid) {
					t.Errorf("step %d %s: real redis-server replied %s, want %s", i+1, s, got.replies[i], want)
				}
				if !same(s, simulated.replies[i], want, got.grid) {
					t.Errorf("step %d %s: simulated node replied %s, want %s", i+1, s, simulated.replies[i], want)
				}
			}
		})
	}
}

// TestDifferentialExamples runs fixed sequences on both sides and checks
// each reply against the value Redis 7 documents.
func TestDifferentialExamples(t *testing.T) {
	t.Parallel()
	ttl := shortTTL(1) // 1.5 phases
	t.Run("single", func(t *testing.T) {
		real := newRealSide(t, realredis.Start(t, realredis.Options{}))
		runExamples(t, simConfig{}, real, []example{{
			name: "expiry",
			steps: []step{cmd("SET", "lock:a", "t1", "NX", "PX", ttl), cmd("SET", "lock:a", "t2", "NX", "PX", ttl), wait1(),
				cmd("GET", "lock:a"), ttlCmd("PTTL", "lock:a"), wait1(), cmd("GET", "lock:a"), ttlCmd("PTTL", "lock:a"),
				cmd("SET", "lock:a", "t2", "NX", "PX", ttl)},
			want: []string{`"OK"`, "(nil)", "", `"t1"`, "(integer) @1/2", "", "(nil)", "(integer) -2", `"OK"`},
		}, {
			name: "release-with-lua",
			steps: []step{cmd("SET", "lock:a", "t1", "PX", "100000"),
				cmd(append(evalOf(sim.ScriptCompareAndDelete), "t2")...),
				cmd("EVALSHA", evalshaOf(sim.ScriptCompareAndDelete), "1", "lock:a", "t1"),
				cmd("EXISTS", "lock:a")},
			want: []string{`"OK"`, "(integer) 0", "(integer) 1", "(integer) 0"},
		}, {
			name: "script-errors",
			steps: []step{cmd("HSET", "lock:a", "c1:1", "t1"),
				cmd(append(evalOf(sim.ScriptReentrantAcquire), "100000", "c1:1")...),
				cmd("EVALSHA", evalshaOf(sim.ScriptReentrantAcquire), "1", "lock:a", "100000", "c1:1"),
				cmd("SET", "lock:b", "t1"),
				cmd("EVALSHA", strings.ToUpper(evalshaOf(sim.ScriptReentrantAcquire)), "1", "lock:b", "100000", "c1:1")},
			want: []string{"(integer) 1",
				"(error) ERR hash value is not an integer script: c0190edfea8d973feff619e97bdb51ffbb43f86b, on @user_script:1.",
				"(error) ERR hash value is not an integer script: c0190edfea8d973feff619e97bdb51ffbb43f86b, on @user_script:1.",
				`"OK"`,
				"(error) WRONGTYPE Operation against a key holding the wrong kind of value script: c0190edfea8d973feff619e97bdb51ffbb43f86b, on @user_script:1."},
		}})
	})
	t.Run("replication", func(t *testing.T) {
		opts := realredis.Options{Extra: []string{"--repl-diskless-sync", "no"}}
		real := newRealSide(t, realredis.Start(t, opts), realredis.Start(t, opts))
		runExamples(t, simConfig{replica: true}, real, []example{{
			name: "replica-expiry-and-readonly",
			steps: []step{cmd("SET", "lock:a", "t1", "PX", ttl), onReplica(cmd("GET", "lock:a")),
				onReplica(ttlCmd("PTTL", "lock:a")), onReplica(cmd("SET", "lock:a", "t2")),
				cmd("WAIT", "1", "1000"), wait1(), wait1(), onReplica(cmd("GET", "lock:a")), onReplica(cmd("EXISTS", "lock:a"))},
			want: []string{`"OK"`, `"t1"`, "(integer) @3/2", "(error) READONLY You can't write against a read only replica.",
				"(integer) 1", "", "", "(nil)", "(integer) 0"},
		}, {
			// WAIT counts the replicas that acknowledged the client's
			// writes: none while the replica is stopped (after the timeout;
			// a real server ends it on its 100 ms cron, hence the wait
			// step after it), one as soon as it has caught up.
			name: "wait-counts-acknowledgements",
			steps: []step{{kind: stallStep}, cmd("SET", "lock:a", "t1", "PX", "100000"),
				{args: []string{"WAIT", "1", "50"}, untimed: true}, wait1(), {kind: resumeStep},
				cmd("WAIT", "1", "5000"), onReplica(cmd("GET", "lock:a"))},
			want: []string{"", `"OK"`, "(integer) 0", "", "", "(integer) 1", `"t1"`},
		}, {
			// Redis 7 replicates a script as its effects, so the replica
			// never saw the EVAL: after a failover EVALSHA must fail until
			// the script is sent again.
			name: "scripts-are-not-replicated",
			steps: []step{cmd("SET", "lock:a", "t1", "PX", "100000"),
				cmd(append(evalOf(sim.ScriptCompareAndPExpire), "t1", "200000")...),
				{kind: promoteStep},
				onReplica(ttlCmd("PTTL", "lock:a")),
				onReplica(cmd("EVALSHA", evalshaOf(sim.ScriptCompareAndDelete), "1", "lock:a", "t1")),
				onReplica(cmd(append(evalOf(sim.ScriptCompareAndDelete), "t1")...)),
				onReplica(cmd("EXISTS", "lock:a"))},
			want: []string{`"OK"`, "(integer) 1", "", "(integer) 200000",
				"(error) NOSCRIPT No matching script. Please use EVAL.", "(integer) 1", "(integer) 0"},
		}})
	})
	t.Run("persistence", func(t *testing.T) {
		real := newRealSide(t, realredis.Start(t, realredis.Options{AppendOnly: true, AppendFsync: "always"}))
		runExamples(t, simConfig{}, real, []example{{
			name: "acknowledged-writes-survive-kill-9",
			steps: []step{cmd("SET", "lock:a", "t1", "PX", shortTTL(0)), cmd("SET", "lock:b", "t1", "PX", "100000"),
				cmd(append(evalOf(sim.ScriptCompareAndDelete), "t2")...),
				{kind: crashStep},
				cmd("EVALSHA", evalshaOf(sim.ScriptCompareAndDelete), "1", "lock:a", "t1"),
				cmd("GET", "lock:a"), cmd("GET", "lock:b")},
			// The restart takes at least the next phase, so lock:a (half a
			// phase) expires across it, as its absolute expiry says.
			want: []string{`"OK"`, `"OK"`, "(integer) 0", "", "(error) NOSCRIPT No matching script. Please use EVAL.", "(nil)", `"t1"`},
		}})
	})
}
