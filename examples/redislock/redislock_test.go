// Package redislock_test puts github.com/bsm/redislock, unmodified, under
// locklab's faults: Obtain with a retry strategy, and a holder that keeps
// its lock with Refresh from a goroutine of its own. Copy it into your
// module and adapt the factory.
package redislock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/locklab/locklab/locktest"
	_ "github.com/locklab/locklab/locktest/htmlreport" // -locktest.report writes HTML
	"github.com/redis/go-redis/v9"
)

const ttl = 2 * time.Second

// Obtain retries every 100ms until its context ends (redislock's own
// deadline is the TTL); Release gives the lock back.
func TestRedislock(t *testing.T) {
	locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
		c := redislock.New(clients[0])
		var held *redislock.Lock
		return locktest.Funcs{
			LockFunc: func(ctx context.Context) (err error) {
				held, err = c.Obtain(ctx, "orders", ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
				return err
			},
			UnlockFunc: func(ctx context.Context) error { return held.Release(ctx) },
		}
	}, locktest.Options{TTL: ttl, Expect: locktest.Expect{
		locktest.Pause:   locktest.Resource,
		locktest.Clock:   locktest.MutualExclusion | locktest.Resource,
		locktest.Restart: locktest.MutualExclusion | locktest.Resource,
		locktest.Delay:   locktest.Any,
		// A lost reply to the holder's resource write keeps it waiting
		// past its TTL while it still believes it holds: the next client
		// takes the lock meanwhile. Nothing in the client looks at the
		// lease's deadline, so both hold at once.
		locktest.Drop: locktest.MutualExclusion,
	}})
}

// Refreshing keeps the lock while the holder works longer than the TTL: a
// goroutine calls Refresh every TTL/3 until Unlock stops it, and gives up
// (without telling the worker) when a Refresh fails.
func TestRedislockRefresh(t *testing.T) {
	locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
		return &refreshing{client: redislock.New(clients[0])}
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

type refreshing struct {
	client *redislock.Client
	held   *redislock.Lock
	stop   chan struct{}
	done   sync.WaitGroup
}

func (r *refreshing) Lock(ctx context.Context) error {
	l, err := r.client.Obtain(ctx, "orders", ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
	if err != nil {
		return err
	}
	r.held, r.stop = l, make(chan struct{})
	r.done.Add(1)
	go func() {
		defer r.done.Done()
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if l.Refresh(ctx, ttl, nil) != nil {
					return
				}
			}
		}
	}()
	return nil
}

func (r *refreshing) Unlock(ctx context.Context) error {
	close(r.stop)
	r.done.Wait()
	return r.held.Release(ctx)
}

// With an asynchronous replica, a failover loses the lock with the writes
// the master had not yet replicated: a single-instance lock hands it out
// twice.
func TestRedislockFailover(t *testing.T) {
	locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
		c := redislock.New(clients[0])
		var held *redislock.Lock
		return locktest.Funcs{
			LockFunc: func(ctx context.Context) (err error) {
				held, err = c.Obtain(ctx, "orders", ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
				return err
			},
			UnlockFunc: func(ctx context.Context) error { return held.Release(ctx) },
		}
	}, locktest.Options{TTL: ttl, Replicas: 1, Classes: []locktest.Class{locktest.Failover}, Expect: locktest.Expect{
		locktest.Failover: locktest.MutualExclusion | locktest.Resource,
	}})
}
