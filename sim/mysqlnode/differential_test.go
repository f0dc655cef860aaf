package mysqlnode

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/sim/proptest"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { proptest.Main(m, 40) }

// diffNames are the lock names the sequences use: two differing only in
// case (MariaDB compares names byte for byte), one more, one of 70
// characters (allowed: the limit is 64 three-byte characters) and one of
// 200 bytes (refused with error 1059).
var diffNames = []string{"job", "JOB", "other", strings.Repeat("n", 70), strings.Repeat("x", 200)}

// TestDifferentialMySQLUserLocks drives the simulated server and a real
// MariaDB 10.11 with the same random sequences of the user-level lock
// functions over three sessions, through the same unmodified
// go-sql-driver/mysql, as text queries and as prepared statements, and
// requires the same reply to every statement and the same holder of every
// name (IS_USED_LOCK, sessions named by slot) after it. Sessions are
// closed and opened again; the real server's session must have ended
// (its locks freed) before the sequence goes on. The sequences are
// rapid's, from the pinned seed (sim/proptest).
func TestDifferentialMySQLUserLocks(t *testing.T) {
	dsn := realMariaDB(t)
	realPool := realDB(t, dsn)
	realPool.SetMaxIdleConns(0) // a closed *sql.Conn is a closed session
	observer := pinned(t, realDB(t, dsn))
	rapid.Check(t, func(rt *rapid.T) {
		srv := NewServer(Config{})
		simPool := simDB(t, srv)
		simPool.SetMaxIdleConns(0)
		d := &diffRun{t: rt, srv: srv, realPool: realPool, simPool: simPool, observer: observer}
		for i := 0; i < 3; i++ {
			d.real = append(d.real, nil)
			d.sim = append(d.sim, nil)
			d.realID = append(d.realID, 0)
			d.simID = append(d.simID, 0)
			d.open(i)
		}
		defer d.closeAll()
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			slot := rapid.IntRange(0, 2).Draw(rt, "slot")
			query, args := drawStatement(rt)
			if query == "reopen" {
				d.reopen(slot)
			} else {
				want := answer(context.Background(), d.real[slot], query, args...)
				got := answer(context.Background(), d.sim[slot], query, args...)
				if isUsedQuery(query) {
					want, got = d.slotted(want, false), d.slotted(got, true)
				}
				if want != got {
					rt.Fatalf("step %d session %d %s %q:\n real: %s\n sim:  %s", step, slot+1, query, args, want, got)
				}
			}
			if w, g := d.holders(d.observer, false), d.holders(d.simObserver(), true); w != g {
				rt.Fatalf("step %d session %d %s %q: holders differ\n real: %s\n sim:  %s", step, slot+1, query, args, w, g)
			}
		}
	})
}

func isUsedQuery(q string) bool { return strings.Contains(strings.ToUpper(q), "IS_USED_LOCK") }

// drawStatement draws one step: a lock function as text or with
// parameters, an erroneous call, or "reopen".
func drawStatement(rt *rapid.T) (string, []any) {
	name := rapid.SampledFrom(diffNames).Draw(rt, "name")
	quoted := "'" + name + "'"
	prepared := rapid.Bool().Draw(rt, "prepared")
	switch rapid.IntRange(0, 15).Draw(rt, "op") {
	case 0, 1, 2, 3:
		// Zero and negative timeouts return at once; 0.01 s waits on
		// the real server's clock, and on the simulated server's (the
		// time package, here outside a bubble).
		timeout := rapid.SampledFrom([]string{"0", "0", "-1", "-0.5", "NULL", "0.01"}).Draw(rt, "timeout")
		if prepared && timeout != "NULL" {
			f, _ := strconv.ParseFloat(timeout, 64)
			return "SELECT GET_LOCK(?, ?)", []any{name, f}
		}
		return "SELECT GET_LOCK(" + quoted + ", " + timeout + ")", nil
	case 4, 5, 6:
		if prepared {
			return "SELECT RELEASE_LOCK(?)", []any{name}
		}
		return "SELECT RELEASE_LOCK(" + quoted + ")", nil
	case 7:
		return "SELECT IS_FREE_LOCK(" + quoted + ")", nil
	case 8:
		if prepared {
			return "SELECT IS_USED_LOCK(?)", []any{name}
		}
		return "SELECT IS_USED_LOCK(" + quoted + ")", nil
	case 9:
		return "SELECT RELEASE_ALL_LOCKS()", nil
	case 10:
		return rapid.SampledFrom([]string{
			"SELECT GET_LOCK('', 0)", "SELECT GET_LOCK(NULL, 0)", "SELECT RELEASE_LOCK(NULL)",
			"SELECT IS_FREE_LOCK('')", "SELECT get_lock(7, 0)", "SELECT release_lock(1.5)",
			"SELECT GET_LOK('job', 0)", "SELECT RELEASE_LOCK('job', 0)", "SELECT RELEASE_ALL_LOCKS(1)",
			"SELECT GET_LOCK('job', 0), GET_LOCK('job', 0), RELEASE_LOCK('job')",
		}).Draw(rt, "odd"), nil
	case 11:
		return "BEGIN", nil
	case 12:
		return "COMMIT", nil
	}
	return "reopen", nil
}

// diffRun is one sequence's pair of servers: slot i is one pinned
// connection on each.
type diffRun struct {
	t                 *rapid.T
	srv               *Server
	realPool, simPool *sql.DB
	observer          *sql.Conn
	simObs            *sql.Conn
	real, sim         []*sql.Conn
	realID, simID     []int64
}

func (d *diffRun) open(slot int) {
	ctx := context.Background()
	for _, side := range []struct {
		pool *sql.DB
		conn *[]*sql.Conn
		ids  *[]int64
	}{{d.realPool, &d.real, &d.realID}, {d.simPool, &d.sim, &d.simID}} {
		c, err := side.pool.Conn(ctx)
		if err != nil {
			d.t.Fatal(err)
		}
		var id int64
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			d.t.Fatal(err)
		}
		(*side.conn)[slot], (*side.ids)[slot] = c, id
	}
}

// reopen closes slot's session on both servers, waits until both have
// ended it, and connects again.
func (d *diffRun) reopen(slot int) {
	realID, simID := d.realID[slot], d.simID[slot]
	_ = d.real[slot].Close()
	_ = d.sim[slot].Close()
	d.awaitRealEnd(realID)
	for d.simOpen(Session(simID)) {
		time.Sleep(time.Millisecond)
	}
	d.open(slot)
}

// awaitRealEnd waits until the real server has ended session id. MariaDB
// ends a session, and frees its user locks, on its own thread after the
// client's COM_QUIT: the next statement may still see the lock held. The
// test orders itself by what it observes (the PROCESSLIST entry gone),
// not by a pause; the 30 s bound is a guard against a hang, not a pace.
func (d *diffRun) awaitRealEnd(id int64) {
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		var n int
		if err := d.observer.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
			d.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("real session %d did not end", id)
		}
	}
}

func (d *diffRun) simOpen(id Session) bool {
	for _, s := range d.srv.Sessions() {
		if s == id {
			return true
		}
	}
	return false
}

func (d *diffRun) simObserver() *sql.Conn {
	if d.simObs == nil {
		c, err := d.simPool.Conn(context.Background())
		if err != nil {
			d.t.Fatal(err)
		}
		d.simObs = c
	}
	return d.simObs
}

// holders renders IS_USED_LOCK of every name, holders named by slot.
func (d *diffRun) holders(obs *sql.Conn, sim bool) string {
	var cols []string
	for _, n := range diffNames[:4] {
		cols = append(cols, "IS_USED_LOCK('"+n+"')")
	}
	return d.slotted(answer(context.Background(), obs, "SELECT "+strings.Join(cols, ", ")), sim)
}

// slotted replaces connection ids in a reply by "session N".
func (d *diffRun) slotted(reply string, sim bool) string {
	ids := d.realID
	if sim {
		ids = d.simID
	}
	if strings.HasPrefix(reply, "ERROR") || strings.HasPrefix(reply, "error") {
		return reply
	}
	fields := strings.Fields(reply)
	for i, f := range fields {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			continue
		}
		fields[i] = "conn?" + f
		for slot, id := range ids {
			if id == n {
				fields[i] = fmt.Sprintf("session%d", slot+1)
			}
		}
	}
	return strings.Join(fields, " ")
}

// closeAll ends the sequence's sessions and waits until the real server
// has ended them, so that the next sequence starts with no lock held
// (without the wait, a lock of the previous sequence was seen held by a
// closed session at the next sequence's first step on a loaded machine).
func (d *diffRun) closeAll() {
	for i := range d.real {
		_ = d.real[i].Close()
		_ = d.sim[i].Close()
	}
	for _, id := range d.realID {
		d.awaitRealEnd(id)
	}
	if d.simObs != nil {
		_ = d.simObs.Close()
	}
}
