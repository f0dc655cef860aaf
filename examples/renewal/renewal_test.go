package renewal_test

import (
	"testing"
	"time"

	"github.com/locklab/locklab/examples/renewal"
	"github.com/locklab/locklab/locktest"
	_ "github.com/locklab/locklab/locktest/htmlreport" // -locktest.report writes HTML
	"github.com/redis/go-redis/v9"
)

const ttl = 2 * time.Second

func init() { renewal.Token = locktest.Token }

// The worker may work longer than the TTL: the watchdog keeps the lease.
// A pause stops the watchdog with the worker (the lease expires under a
// paused holder); a node that forgets, or whose clock jumps, hands the lock
// out twice.
func TestRenewalLock(t *testing.T) {
	locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
		return renewal.New(clients[0], "orders", ttl)
	}, locktest.Options{TTL: ttl, Renews: true, Work: 3 * time.Second, Expect: locktest.Expect{
		locktest.Pause:     locktest.MutualExclusion | locktest.Resource,
		locktest.Clock:     locktest.MutualExclusion | locktest.Resource,
		locktest.Restart:   locktest.MutualExclusion | locktest.Resource,
		locktest.Delay:     locktest.Any,
		locktest.Drop:      locktest.Any,
		locktest.Partition: locktest.Any,
		locktest.Stall:     locktest.MutualExclusion | locktest.Resource,
	}})
}
