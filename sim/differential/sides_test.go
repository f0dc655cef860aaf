package differential

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/internal/realredis"
	"github.com/redis/go-redis/v9"
)

// simConfig says which simulated world a sequence runs in.
type simConfig struct {
	replica bool // node B replicates node A
	// plainLua sends every script to miniredis's Lua instead of the native
	// fast path the scenarios use (runner.Options.PlainLua).
	plainLua bool
}

// simSide drives simulated nodes from a simulated client process, through
// go-redis over the simulated network, as the scenarios do.
type simSide struct {
	w       *sim.World
	p       *sim.Process
	host    *sim.Host
	nodes   []*sim.RedisNode
	clients []*redis.Client
	// resumeAt is when a stalled replica's held-back stream arrives; zero
	// when it is not stalled.
	resumeAt time.Duration
}

var simClientOptions = sim.ClientOptions{Timeout: 10 * time.Second}

func (s *simSide) do(node int, args []string) string {
	return doRender(s.clients[node], s.p.Context(), args)
}

// sync lets the replication messages of the current instant arrive (see
// runSim: there is no lag, but a message still travels as an event).
func (s *simSide) sync()                  { s.p.Sleep(time.Microsecond) }
func (s *simSide) promote()               { s.nodes[1].Promote() }
func (s *simSide) elapsed() time.Duration { return s.p.TrueNow() }
func (s *simSide) sleepUntil(d time.Duration) {
	if now := s.p.TrueNow(); d > now {
		s.p.Sleep(d - now)
	}
}

// stall holds back every message the master sends the replica until
// resumeAt, in order, as a stopped replica's socket does: the real test
// SIGSTOPs the replica for the same phases.
func (s *simSide) stall(resumeAt time.Duration) { s.resumeAt = resumeAt }
func (s *simSide) resume()                      { s.resumeAt = 0 }

func (s *simSide) holdBack(m *sim.Message) (drop bool, delay time.Duration, reason string) {
	if s.resumeAt > 0 && len(s.nodes) > 1 && m.From == s.nodes[0].Name && m.To == s.nodes[1].Name {
		return false, s.resumeAt - s.w.Now(), "replica stalled"
	}
	return false, 0, ""
}

func (s *simSide) crashRestart(wait func()) {
	n := s.nodes[0]
	n.Crash()
	wait()
	n.Restart("always")
	s.clients[0] = n.NewClient(s.host, simClientOptions)
}

// runSim runs steps in a fresh world: true time starts at zero, every clock
// is exact, and the network has no latency, so a command runs at the instant
// its phase begins and a write reaches the replica before the next command
// (a real replica on loopback is behind by microseconds; the real side
// waits for its acknowledgement before reading it).
func runSim(cfg simConfig, steps []step, phases []int, g grid) (runResult, error) {
	w := sim.New(1)
	w.Trace.Off = true
	w.Net.Latency, w.Net.Jitter = 0, 0
	names := []string{"A"}
	if cfg.replica {
		names = append(names, "B")
	}
	var nodes []*sim.RedisNode
	for _, name := range names {
		n := w.NewRedisNode(name, sim.NewClock(0, 0))
		if !cfg.plainLua {
			n.ScriptFastPath = sim.NativeScripts
		}
		nodes = append(nodes, n)
	}
	if cfg.replica {
		nodes[0].Replicate(nodes[1], 0)
	}
	host := w.NewHost("client", nil)
	var res runResult
	s := &simSide{w: w, host: host, nodes: nodes}
	w.Net.AddFilter(s.holdBack)
	host.Spawn("driver", 0, func(p *sim.Process) {
		s.p = p
		for _, n := range nodes {
			s.clients = append(s.clients, n.NewClient(host, simClientOptions))
		}
		res = execute(s, steps, phases, g)
	})
	err := w.Run(time.Hour)
	w.Close()
	return res, err
}

// realSide drives real servers: servers[0] the master (or only server),
// servers[1] its replica.
type realSide struct {
	t       testing.TB
	servers []*realredis.Server
	clients []*redis.Client
	start   time.Time
	// promoted is set when the replica was promoted: the next sequence
	// swaps the roles (see emptied).
	promoted bool
}

func newRealSide(t testing.TB, servers ...*realredis.Server) *realSide {
	r := &realSide{t: t, servers: servers}
	for _, s := range servers {
		r.clients = append(r.clients, s.Client())
	}
	t.Cleanup(func() {
		for _, c := range r.clients {
			c.Close()
		}
	})
	return r
}

var bg = context.Background()

func (r *realSide) do(node int, args []string) string { return doRender(r.clients[node], bg, args) }
func (r *realSide) elapsed() time.Duration            { return time.Since(r.start) }
func (r *realSide) sleepUntil(d time.Duration)        { time.Sleep(time.Until(r.start.Add(d))) }

func (r *realSide) promote() {
	if err := r.clients[1].Do(bg, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		r.t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	r.promoted = true
}

func (r *realSide) stall(time.Duration) {
	if err := r.servers[1].Signal(syscall.SIGSTOP); err != nil {
		r.t.Fatalf("SIGSTOP replica: %v", err)
	}
	r.awaitState(true)
}

func (r *realSide) resume() {
	if err := r.servers[1].Signal(syscall.SIGCONT); err != nil {
		r.t.Fatalf("SIGCONT replica: %v", err)
	}
	r.awaitState(false)
}

// awaitState polls /proc/<pid>/stat until the replica is stopped (state T)
// or not. The 10 s bound is a hang guard, not a pace: the state changes
// within microseconds of the signal on an idle machine.
func (r *realSide) awaitState(stopped bool) {
	pid := r.servers[1].Pid()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return // no /proc (not Linux): the signal is all there is
		}
		// The state follows the command name, which is in parentheses.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		if f := bytes.Fields(rest); len(f) > 0 && (string(f[0]) == "T") == stopped {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("replica (pid %d) not %s within 10s of the signal: %s", pid, map[bool]string{true: "stopped", false: "running"}[stopped], stat)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (r *realSide) crashRestart(wait func()) {
	if err := r.servers[0].Restart(); err != nil {
		r.t.Fatalf("restart after kill -9: %v", err)
	}
	r.clients[0].Close()
	r.clients[0] = r.servers[0].Client()
	// Connect before the phase begins, so the next command's time is the
	// server's, not the TCP handshake's.
	if err := r.clients[0].Ping(bg).Err(); err != nil {
		r.t.Fatalf("PING after restart: %v", err)
	}
	wait()
}

// begin starts the sequence's clock.
func (r *realSide) begin() side {
	r.start = time.Now()
	return r
}

// infoField reads one field of INFO replication.
func infoField(c *redis.Client, field string) string {
	info, err := c.Info(bg, "replication").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// sync waits until the replica has processed everything this client wrote
// (and, in order before it, every DEL the master's own expiry sent): WAIT
// makes the master ask its replica for an acknowledgement at once (REPLCONF
// GETACK) instead of waiting for the once-a-second one.
func (r *realSide) sync() {
	n, err := r.clients[0].Do(bg, "WAIT", "1", "10000").Int()
	if err != nil || n != 1 {
		r.t.Fatalf("WAIT 1 10000 on the master: %d, %v (replica %s)", n, err, infoField(r.clients[1], "master_link_status"))
	}
}

// must runs a set-up command.
func (r *realSide) must(node int, args ...any) {
	if err := r.clients[node].Do(bg, args...).Err(); err != nil {
		r.t.Fatalf("%v on server %d: %v", args, node, err)
	}
}

// follow makes the replica follow the master again (after a promotion) and
// waits until its link is up.
func (r *realSide) follow() {
	if infoField(r.clients[1], "role") == "slave" && infoField(r.clients[1], "master_link_status") == "up" {
		return
	}
	r.must(1, "REPLICAOF", "127.0.0.1", strconv.Itoa(r.servers[0].Port))
	deadline := time.Now().Add(10 * time.Second)
	for infoField(r.clients[1], "master_link_status") != "up" {
		if time.Now().After(deadline) {
			r.t.Fatalf("replica link to the master not up within 10s")
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// emptied empties every server and its script cache between sequences.
func (r *realSide) emptied() {
	if len(r.servers) > 1 {
		r.resume() // a run cut short may have left it stopped
	}
	if r.promoted {
		// The promoted replica stays master and the old master follows it:
		// it took no writes since (unless its own expiry deleted a key), so
		// PSYNC continues from the new master's copy of the old history (a
		// partial resync) instead of a full one, which costs a fork and
		// keeps the replica out of WAIT until its first acknowledgement.
		r.servers[0], r.servers[1] = r.servers[1], r.servers[0]
		r.clients[0], r.clients[1] = r.clients[1], r.clients[0]
		r.promoted = false
	}
	if len(r.servers) > 1 {
		r.follow()
	}
	r.must(0, "FLUSHALL")
	for i := range r.servers {
		r.must(i, "SCRIPT", "FLUSH")
	}
	if len(r.servers) > 1 {
		r.sync()
	}
}

// tally counts the sequences of one property, and those whose real run
// had to be repeated on a coarser grid because the machine was busy.
type tally struct {
	checks, retried int
	coarsest        grid
	lastLate        string
}

// report logs the tally. Repeated runs are not a failure: every sequence
// was still compared, on a grid the machine could keep.
func (c *tally) report(t *testing.T) {
	t.Helper()
	t.Logf("%d sequences compared, %d of them repeated on a coarser grid than %v (busy machine)", c.checks, c.retried, baseGrid)
	if c.retried > 0 {
		t.Logf("coarsest grid used: %v; last run that did not keep time: %s", time.Duration(c.coarsest), c.lastLate)
	}
}
