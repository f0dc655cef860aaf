// Package redsync_test puts github.com/go-redsync/redsync/v4, unmodified and
// with its default options, under locklab's faults. Copy it into your
// module and adapt the factory to the way you build your mutex.
package redsync_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/locklab/locklab/locktest"
	_ "github.com/locklab/locklab/locktest/htmlreport" // -locktest.report writes HTML
	"github.com/redis/go-redis/v9"
)

// One Redis node, redsync's defaults (8s expiry, 32 tries, random retry
// delays): a single-instance lease, so a paused holder writes after its
// lock expired, a node that forgets hands the lock out twice, and a
// release delayed in the network deletes the lock a later try of the same
// Lock call took (redsync keeps one value for all its tries).
func TestRedsync(t *testing.T) {
	locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
		m := redsync.New(goredis.NewPool(clients[0])).NewMutex("orders")
		return locktest.Funcs{
			LockFunc:   m.LockContext,
			UnlockFunc: func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err },
		}
	}, locktest.Options{TTL: 8 * time.Second, Expect: locktest.Expect{
		locktest.Pause:   locktest.Resource,
		locktest.Clock:   locktest.MutualExclusion | locktest.Resource,
		locktest.Restart: locktest.MutualExclusion | locktest.Resource,
		locktest.Delay:   locktest.MutualExclusion | locktest.Resource,
		locktest.Stall:   locktest.MutualExclusion | locktest.Resource,
	}})
}
