package locktest

import (
	"context"
	"errors"
	"runtime"
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

// RunZooKeeper finds the break of a paused zk.NewLock holder. Since a
// pause freezes the whole host (docs/faults.md), the first one found is
// not the overlap of a holder paused past its session but what a shorter
// pause does: past go-zookeeper's read timeout (2/3 of the session) the
// resumed client's connection closes, its Unlock fails, and its node —
// whose path zk.Lock keeps to itself — stays behind with the live session:
// the lock is unavailable (liveness). Its failfile replays byte for byte
// at GOMAXPROCS 1 (and under -race, where CI runs this test).
func TestRunZooKeeperFindsPausedHolder(t *testing.T) {
	got := observeFindings(t)
	opt := Options{TTL: 4 * time.Second, Classes: []Class{Pause}, Expect: Expect{Pause: MutualExclusion | Resource | Liveness}}
	RunZooKeeper(t, zkNewLock, opt)
	f := got[Pause]
	if f.prop&(MutualExclusion|Liveness) == 0 || f.res == nil {
		t.Fatalf("pause: zk.NewLock %s in %d runs, want mutual exclusion or liveness violated", f.prop.found(), f.runs)
	}
	if f.sc.Algorithm != customZooKeeper || f.sc.MadeFor == nil || f.sc.MadeFor.Lock != "mutex on zookeeper-ensemble" {
		t.Errorf("the failfile does not name the ZooKeeper lock: algorithm %s, made_for %+v", f.sc.Algorithm, f.sc.MadeFor)
	}
	want := f.res.TraceSHA256
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	replayOpt := opt
	replayOpt.Replay = f.file
	RunZooKeeper(t, zkNewLock, replayOpt)
	if r := got[Pause]; r.res == nil || r.res.TraceSHA256 != want || r.prop != f.prop {
		t.Errorf("replay of %s at GOMAXPROCS 1: %v, trace %v; want %s with trace %s", f.file, r.prop.found(), r.res, f.prop.found(), want)
	}
}

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
