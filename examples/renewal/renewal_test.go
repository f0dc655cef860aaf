// Package renewal_test is your own lock with a renewal goroutine — SET NX
// PX, a watchdog that extends the lease every TTL/3 with a
// compare-and-pexpire script, a compare-and-delete release — put under
// locklab's faults. Copy it and replace Lease with your lock.
package renewal_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios/locktest"
	"github.com/redis/go-redis/v9"
)

const ttl = 2 * time.Second

var (
	extend  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
	release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	// refreshOrRetake is the refresh of redis-semaphore's bug report: when
	// the key has expired it takes it again, silently, instead of telling
	// the holder it lost the lock.
	refreshOrRetake = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) elseif redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then return 1 else return 0 end`)
)

var errBusy = errors.New("lock busy")

// Lease is the lock: Lock takes it and starts the watchdog, Unlock stops
// the watchdog and releases.
type Lease struct {
	rdb     *redis.Client
	key     string
	refresh *redis.Script
	token   string
	stop    chan struct{}
	wg      sync.WaitGroup
}

func (l *Lease) Lock(ctx context.Context) error {
	token := locktest.Token(ctx)
	for {
		ok, err := l.rdb.SetNX(ctx, l.key, token, ttl).Result()
		if err == nil && ok {
			break
		}
		select {
		case <-ctx.Done():
			return errBusy
		case <-time.After(100 * time.Millisecond):
		}
		if err != nil {
			continue
		}
		return errBusy
	}
	l.token, l.stop = token, make(chan struct{})
	l.wg.Add(1)
	go l.watchdog(ctx)
	return nil
}

// watchdog extends the lease every TTL/3; it stops when a renewal says the
// lease is gone, when Unlock stops it, or when the context ends.
func (l *Lease) watchdog(ctx context.Context) {
	defer l.wg.Done()
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			n, err := l.refresh.Run(ctx, l.rdb, []string{l.key}, l.token, ttl.Milliseconds()).Int()
			if err == nil && n == 0 {
				return
			}
		}
	}
}

func (l *Lease) Unlock(ctx context.Context) error {
	close(l.stop)
	l.wg.Wait()
	return release.Run(ctx, l.rdb, []string{l.key}, l.token).Err()
}

// The worker may work longer than the TTL: the watchdog keeps the lease.
// A pause stops the watchdog with the worker (the lease expires under a
// paused holder); a node that forgets, or whose clock jumps, hands the lock
// out twice.
func TestRenewalLock(t *testing.T) {
	locktest.Run(t, func(clients []*redis.Client) locktest.Lock {
		return &Lease{rdb: clients[0], key: "orders", refresh: extend}
	}, locktest.Options{TTL: ttl, Renews: true, Work: 3 * time.Second, Expect: locktest.Expect{
		locktest.Pause:     locktest.MutualExclusion | locktest.Resource,
		locktest.Clock:     locktest.MutualExclusion | locktest.Resource,
		locktest.Restart:   locktest.MutualExclusion | locktest.Resource,
		locktest.Delay:     locktest.Any,
		locktest.Drop:      locktest.Any,
		locktest.Partition: locktest.Any,
	}})
}
