package locktest

// How a database lock's runs hold the user's lock and the driver's pool:
// the pool is opened, and the user's lock built on it, from the lock's own
// code on the client's first Lock (the pool's goroutines then live outside
// the kernel, in the bubble), and closed once every client using it ended.

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/locklab/locklab/algorithms"
)

// builder makes the harness's algorithm from a user's factory: Factory for
// Redis locks, dbBuilder for database locks.
type builder interface {
	algorithm(ttl time.Duration, renews, fencing bool) algorithms.Factory
}

// dbBuilder builds a client's lock from the backend's client (Conns.Backend):
// open makes the driver's handle (and how to close it), build the user's lock.
type dbBuilder struct {
	open  func(client any, opt Database) (handle any, close func(), err error)
	build func(handle any) Lock
	opt   Database
}

func (b dbBuilder) algorithm(ttl time.Duration, renews, fencing bool) algorithms.Factory {
	pools := &dbPools{}
	return func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		if c.Backend == nil {
			return nil, errors.New("locktest: a database lock needs a database backend")
		}
		l := &dbLock{b: b, client: c.Backend, pools: pools}
		return &userLock{lock: l, ttl: ttl, renews: renews, fencing: fencing, mode: p.Extra[algorithms.ParamMode]}, nil
	}
}

// dbLock opens the driver's handle and builds the user's lock on the
// client's first Lock, from the lock's own code (outside the kernel, where
// the pool's goroutines live), and closes the handle once every client
// using it has ended (crashed, or the run is over).
type dbLock struct {
	b      dbBuilder
	client any
	pools  *dbPools
	lock   Lock
	held   bool // Lock succeeded and Unlock was not called (pools.mu)
}

func (l *dbLock) user(ctx context.Context) (Lock, error) {
	if l.lock != nil {
		return l.lock, nil
	}
	p, err := l.pools.use(ctx, l.client, func() (any, func(), error) { return l.b.open(l.client, l.b.opt) })
	if err != nil {
		return nil, err
	}
	l.lock = l.b.build(p.handle)
	if l.lock == nil {
		return nil, errors.New("locktest: the factory returned a nil Lock")
	}
	l.pools.mu.Lock()
	p.locks = append(p.locks, l)
	l.pools.mu.Unlock()
	return l.lock, nil
}

func (l *dbLock) Lock(ctx context.Context) error {
	u, err := l.user(ctx)
	if err != nil {
		return err
	}
	err = u.Lock(ctx)
	l.setHeld(err == nil)
	return err
}

// LockToken hands out the user's fencing token (Options.Fencing), or
// none when the lock is no TokenLock.
func (l *dbLock) LockToken(ctx context.Context) (int64, error) {
	u, err := l.user(ctx)
	if err != nil {
		return 0, err
	}
	var token int64
	if tl, ok := u.(TokenLock); ok {
		token, err = tl.LockToken(ctx)
	} else {
		err = u.Lock(ctx)
	}
	l.setHeld(err == nil)
	return token, err
}

func (l *dbLock) Unlock(ctx context.Context) error {
	if l.lock == nil {
		return errors.New("locktest: Unlock before Lock")
	}
	l.setHeld(false)
	return l.lock.Unlock(ctx)
}

func (l *dbLock) setHeld(held bool) {
	l.pools.mu.Lock()
	l.held = held
	l.pools.mu.Unlock()
}

// Lost forwards the user's LossReporter (asked after a successful Lock).
func (l *dbLock) Lost() <-chan struct{} {
	if lr, ok := l.lock.(LossReporter); ok {
		return lr.Lost()
	}
	return nil
}

// dbPools are the driver handles of one class's runs, one per backend
// client: per client host, or the service's one shared client. A run's
// backend makes new clients, so handles never cross runs.
type dbPools struct {
	mu sync.Mutex
	m  map[any]*dbPool
}

type dbPool struct {
	handle any
	close  func()
	users  int
	locks  []*dbLock
}

// use returns the pool of client, opening it on first use; the caller is
// one more user until ctx (its host's context) ends. When the last user
// has ended, the pool closes, after every lock that is an io.Closer. A pool's Close waits for the connections
// taken out of it (pgxpool's does), so first every lock still held —
// by a client that crashed or was holding when the run ended — is
// unlocked with its ended context: the driver fails the statement before
// sending it, and the lock's Unlock gives its connection back.
func (ps *dbPools) use(ctx context.Context, client any, open func() (any, func(), error)) (*dbPool, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.m == nil {
		ps.m = map[any]*dbPool{}
	}
	p := ps.m[client]
	if p == nil {
		h, closeFn, err := open()
		if err != nil {
			return nil, err
		}
		p = &dbPool{handle: h, close: closeFn}
		ps.m[client] = p
	}
	p.users++
	go func() {
		<-ctx.Done()
		ps.mu.Lock()
		p.users--
		last := p.users == 0
		if last && ps.m[client] == p {
			delete(ps.m, client)
		}
		var held []*dbLock
		if last {
			for _, l := range p.locks {
				if l.held {
					l.held = false
					held = append(held, l)
				}
			}
		}
		ps.mu.Unlock()
		if !last {
			return
		}
		for _, l := range held {
			_ = l.lock.Unlock(ctx)
		}
		for _, l := range p.locks {
			if c, ok := l.lock.(io.Closer); ok {
				_ = c.Close()
			}
		}
		if p.close != nil {
			p.close()
		}
	}()
	return p, nil
}
