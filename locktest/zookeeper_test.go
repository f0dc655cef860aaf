package locktest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/algorithms/zklock/gozk"
)

// zkNewLock is go-zookeeper's own lock recipe, as its users write it.
func zkNewLock(conn *zk.Conn) Lock {
	l := zk.NewLock(conn, "/orders", zk.WorldACL(zk.PermAll))
	return Funcs{
		LockFunc:   func(context.Context) error { return l.Lock() },
		UnlockFunc: func(context.Context) error { return l.Unlock() },
	}
}

// RunZooKeeper finds both breaks of a paused zk.NewLock holder (issue
// 31). Since a pause freezes the whole host (docs/faults.md), the first
// one an exploration finds is what a shorter pause does: past
// go-zookeeper's read timeout (2/3 of the session) the resumed client's
// connection closes, its Unlock fails, and its node — whose path zk.Lock
// keeps to itself — stays behind with the live session: the lock is
// unavailable (liveness). That is a real zk.NewLock behaviour and stays
// the default finding. A user after the overlap hunts for it
// (Options.Hunt): runs that break liveness only are passed over, and the
// exploration finds a holder paused past its session while the next
// client takes the lock. Its failfile replays byte for byte at
// GOMAXPROCS 1, and to the digest pinned here, which CI checks again
// under -race.
func TestRunZooKeeperFindsPausedHolder(t *testing.T) {
	got := observeFindings(t)
	opt := Options{TTL: 4 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: MutualExclusion | Resource | Liveness}}
	RunZooKeeper(t, zkNewLock, opt)
	if f := got[Pause]; f.prop != Liveness || f.res == nil {
		t.Fatalf("pause: zk.NewLock %s in %d runs, want liveness violated first", f.prop.found(), f.runs)
	}

	opt.Hunt = Hunt{Pause: MutualExclusion}
	RunZooKeeper(t, zkNewLock, opt)
	f := got[Pause]
	if f.prop&MutualExclusion == 0 || f.res == nil {
		t.Fatalf("pause, hunting mutual exclusion: zk.NewLock %s in %d runs, want mutual exclusion violated", f.prop.found(), f.runs)
	}
	if w := f.res.Report.Witness.MutualExclusion; w == nil || !strings.Contains(w.String(), "both held during") {
		t.Fatalf("pause: the witness %v does not show two holders", w)
	}
	if f.sc.Algorithm != customZooKeeper || f.sc.MadeFor == nil || f.sc.MadeFor.Lock != "mutex on zookeeper-ensemble" {
		t.Errorf("the failfile does not name the ZooKeeper lock: algorithm %s, made_for %+v", f.sc.Algorithm, f.sc.MadeFor)
	}
	want := f.res.TraceSHA256
	t.Logf("overlap: %s, trace %s", f.res.Report.Witness.MutualExclusion, want)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	replayOpt := opt
	replayOpt.Replay = f.file
	RunZooKeeper(t, zkNewLock, replayOpt)
	if r := got[Pause]; r.res == nil || r.res.TraceSHA256 != want || r.prop != f.prop {
		t.Errorf("replay of %s at GOMAXPROCS 1: %v, trace %v; want %s with trace %s", f.file, r.prop.found(), r.res, f.prop.found(), want)
	}
	if want != pausedOverlapDigest {
		t.Errorf("the overlap's trace is %s (race detector %v), pinned %s: the same run must give the same bytes with and without -race", want, raceEnabled, pausedOverlapDigest)
	}
}

// Hunting must not make a broken lock read as safe: a class expected Safe
// whose hunt for an overlap finds none fails when a run it passed over
// broke liveness, and says how to see it.
func TestHuntDoesNotHideABreak(t *testing.T) {
	out, err := helper(t, "hunt-hides-liveness")
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperProcess/pause",
		"1 run(s) broke only what Options.Hunt leaves out (it hunts mutual exclusion), the first of them run 3",
		"no run broke what Options.Hunt looks for, but 1 run(s) it passed over broke the lock (liveness violated; the first is run 3 of seed 1), and the class is expected safe: run without Hunt to see them",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// pausedOverlapDigest is the trace digest of the overlap
// TestRunZooKeeperFindsPausedHolder finds, recorded without -race.
const pausedOverlapDigest = "3f11c4697b4ec500ad23dff339b8452a7973eae24e93f98e543b807a3871fab1"

// gozkQueue is the project's queue recipe (algorithms/zklock/gozk): a
// protected sequential ephemeral node, a watch on the predecessor only,
// a guaranteed delete. Its background delete stops when the client's
// context ends (a crash, the run's end), as locktest asks of a lock's
// goroutines.
func gozkQueue(conn *zk.Conn) Lock {
	q := gozk.NewQueue(conn, "/orders")
	stopped := false
	return Funcs{
		LockFunc: func(ctx context.Context) error {
			if !stopped {
				stopped = true
				context.AfterFunc(ctx, q.Stop)
			}
			_, err := q.Lock()
			return err
		},
		UnlockFunc: func(context.Context) error { return q.Unlock() },
	}
}

// persistentNodeLock is a broken hand-written recipe: it takes the lock
// by creating a node, as the tutorials do, but forgets FlagEphemeral, so
// a holder that dies never gives the node back.
func persistentNodeLock(conn *zk.Conn) Lock {
	const path = "/orders-lock"
	return Funcs{
		LockFunc: func(context.Context) error {
			_, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll))
			if errors.Is(err, zk.ErrNodeExists) {
				return errBusy
			}
			return err
		},
		UnlockFunc: func(context.Context) error { return conn.Delete(path, -1) },
	}
}
