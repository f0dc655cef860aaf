// Package renewal is a lock with a renewal goroutine, written the way many
// teams write their own: SET NX PX, a watchdog that extends the lease every
// TTL/3 with a compare-and-pexpire script, a compare-and-delete release. Its
// test (renewal_test.go) puts it under locklab's faults; copy both and
// replace Lease with your lock.
package renewal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// New returns the lock on key for one client.
func New(rdb *redis.Client, key string, ttl time.Duration) *Lease {
	return &Lease{rdb: rdb, key: key, ttl: ttl, refresh: extend}
}

// NewRetaking returns the lock with redis-semaphore's buggy refresh: an
// expired key is silently taken again.
func NewRetaking(rdb *redis.Client, key string, ttl time.Duration) *Lease {
	return &Lease{rdb: rdb, key: key, ttl: ttl, refresh: refreshOrRetake}
}

// Token is how the lock draws its value; tests swap in locktest.Token for
// byte-identical replays.
var Token = func(ctx context.Context) string { return randomToken() }

var (
	extend  = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
	release = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	// refreshOrRetake is the refresh of redis-semaphore's bug report: when
	// the key has expired it takes it again, silently, instead of telling
	// the holder it lost the lock.
	refreshOrRetake = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) elseif redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then return 1 else return 0 end`)
)

// ErrBusy: another client holds the lock.
var ErrBusy = errors.New("lock busy")

// Lease is the lock: Lock takes it and starts the watchdog, Unlock stops
// the watchdog and releases.
type Lease struct {
	rdb     *redis.Client
	key     string
	ttl     time.Duration
	refresh *redis.Script
	token   string
	stop    chan struct{}
	lost    chan struct{}
	wg      sync.WaitGroup
}

// Lost is closed when the watchdog learns the lease is gone: the holder
// must stop acting on the lock.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

func (l *Lease) Lock(ctx context.Context) error {
	token := Token(ctx)
	for {
		ok, err := l.rdb.SetNX(ctx, l.key, token, l.ttl).Result()
		if err == nil && ok {
			break
		}
		select {
		case <-ctx.Done():
			return ErrBusy
		case <-time.After(100 * time.Millisecond):
		}
		if err != nil {
			continue
		}
		return ErrBusy
	}
	l.token, l.stop, l.lost = token, make(chan struct{}), make(chan struct{})
	l.wg.Add(1)
	go l.watchdog(ctx)
	return nil
}

// watchdog extends the lease every TTL/3; it stops when a renewal says the
// lease is gone, when Unlock stops it, or when the context ends.
func (l *Lease) watchdog(ctx context.Context) {
	defer l.wg.Done()
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
			n, err := l.refresh.Run(ctx, l.rdb, []string{l.key}, l.token, l.ttl.Milliseconds()).Int()
			if err == nil && n == 0 {
				close(l.lost)
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

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
