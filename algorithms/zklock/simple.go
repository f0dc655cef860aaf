package zklock

// The simple ZooKeeper lock: one ephemeral node.
//
//	acquire:  create /<key> ephemeral
//	          if it exists: exists(/<key>, watch), wait for the watch, retry
//	release:  delete /<key> (if its ephemeralOwner is our session)
//
// The node is ephemeral, so a dead holder's session expiry frees the lock:
// no TTL to choose. But every waiter watches the same node, so each release
// wakes all of them, they all rush to create it, one wins and the others
// set their watches again: with n waiters a full round of hand-overs costs
// n + (n-1) + ... + 1 = n(n+1)/2 notifications — the herd effect the
// ZooKeeper recipes page warns about (zk-queue watches only a predecessor:
// n notifications). It shares the queue lock's expiry gap: a session that
// expires while its holder is paused or cut off still ends in two holders.

import (
	"errors"
	"fmt"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/zk"
)

// Simple is the single-ephemeral-node lock.
type Simple struct {
	Conn *zk.Conn
	// Path is the lock node, /<key>.
	Path string
	// StopOnSuspended marks the lease lost on SUSPENDED, not only on LOST.
	StopOnSuspended bool
	// Fencing may be FenceZxid: the node's creation zxid.
	Fencing Fencing

	holder holder
}

// NewSimple makes the lock on path.
func NewSimple(conn *zk.Conn, path string, stopOnSuspended bool, fencing Fencing) *Simple {
	s := &Simple{Conn: conn, Path: path, StopOnSuspended: stopOnSuspended, Fencing: fencing}
	conn.AddListener(func(st zk.State) { s.holder.stateChanged(st, s.StopOnSuspended) })
	return s
}

// Acquire creates the node, or waits for it to go and tries again.
func (s *Simple) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	start := env.Now()
	for {
		_, stat, err := s.Conn.Create2(s.Path, nil, zk.FlagEphemeral)
		switch {
		case err == nil:
			return s.grant(start, stat), nil
		case errors.Is(err, zk.ErrConnectionLoss):
			continue // the create may have happened: the next try tells
		case !errors.Is(err, zk.ErrNodeExists):
			return nil, err
		}
		exists, stat, watch, err := s.Conn.ExistsW(s.Path)
		if err != nil {
			return nil, err
		}
		if !exists {
			continue // gone already; the watch stays set and will fire on the next create
		}
		if stat.EphemeralOwner == s.Conn.SessionID() {
			return s.grant(start, stat), nil // our own create, whose reply was lost
		}
		if ev, _ := watch.Wait(zk.NoTimeout); ev.Err != nil {
			return nil, ev.Err
		}
	}
}

func (s *Simple) grant(start time.Time, stat *zk.Stat) *algorithms.Lease {
	l := &algorithms.Lease{Resource: s.Path, Token: fmt.Sprintf("%s@session-0x%x", s.Path, stat.EphemeralOwner), Start: start, Validity: start.Add(forever)}
	if s.Fencing == FenceZxid {
		l.Fence = stat.Czxid
	}
	return s.holder.grant(l, s.Conn, s.StopOnSuspended)
}

// Release deletes the node if it is still ours. The node's ephemeralOwner
// says whose it is: after our session expired, /<key> may be somebody
// else's, and a blind delete would free their lock.
func (s *Simple) Release(env algorithms.Env, l *algorithms.Lease) error {
	s.holder.release(l)
	ok, stat, err := s.Conn.Exists(s.Path)
	if err != nil || !ok || stat.EphemeralOwner != s.Conn.SessionID() {
		return err
	}
	err = s.Conn.Delete(s.Path, stat.Version)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
