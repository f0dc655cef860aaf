// Package zknewlock_test puts go-zookeeper's own lock recipe, zk.NewLock,
// unmodified, under locklab's faults through locktest.RunZooKeeper: the
// factory receives a real *zk.Conn connected to the simulated 3-server
// ensemble. Copy it into your module and put your own recipe in the
// factory.
package zknewlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/locktest"
	_ "github.com/locklab/locklab/locktest/htmlreport" // -locktest.report writes HTML
)

// A holder paused past its 4 s session loses its ephemeral node; the next
// waiter takes the lock while the paused holder, which zk.NewLock never
// tells, goes on working: two holders and a lost update. A crashed
// holder's node goes with its session: safe.
func TestZKNewLock(t *testing.T) {
	locktest.RunZooKeeper(t, func(conn *zk.Conn) locktest.Lock {
		l := zk.NewLock(conn, "/orders", zk.WorldACL(zk.PermAll))
		return locktest.Funcs{
			LockFunc:   func(context.Context) error { return l.Lock() },
			UnlockFunc: func(context.Context) error { return l.Unlock() },
		}
	}, locktest.Options{
		TTL:     4 * time.Second, // the session timeout
		Classes: []locktest.Class{locktest.Pause, locktest.Crash},
		Expect:  locktest.Expect{locktest.Pause: locktest.MutualExclusion | locktest.Resource},
	})
}
