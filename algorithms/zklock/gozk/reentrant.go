package gozk

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// Reentrant has Curator InterProcessMutex's reentrancy: the owner that
// holds the lock may acquire it again without touching ZooKeeper, and the
// lock is released (its node deleted) only when every acquire has been
// matched by a release. Curator counts per thread; Go has no thread
// identity, so the owner is named by the caller (a goroutine, a request,
// a job). Releasing more often than acquiring, or from another owner, is
// an error, as IllegalMonitorStateException is in Curator. Underneath is
// the fixed Queue (protected create, guaranteed delete).
type Reentrant struct {
	Queue *Queue

	mu    sync.Mutex
	owner string
	count int
}

// NewReentrant makes a reentrant lock on dir.
func NewReentrant(conn *zk.Conn, dir string) *Reentrant {
	return &Reentrant{Queue: NewQueue(conn, dir)}
}

// Lock acquires for owner: at once if owner already holds, else through
// the queue. Two owners of one Reentrant must not call Lock at the same
// time (as one InterProcessMutex is shared by threads of one process,
// Curator makes the others wait on its internal lock; here they would
// queue behind each other in ZooKeeper, which the Queue handle does not
// support).
func (r *Reentrant) Lock(owner string) error {
	r.mu.Lock()
	if r.count > 0 && r.owner == owner {
		r.count++
		r.mu.Unlock()
		return nil
	}
	if r.count > 0 {
		r.mu.Unlock()
		return zk.ErrDeadlock
	}
	r.mu.Unlock()
	if _, err := r.Queue.Lock(); err != nil {
		return err
	}
	r.mu.Lock()
	r.owner, r.count = owner, 1
	r.mu.Unlock()
	return nil
}

// Unlock releases one acquire of owner; the last one deletes the node.
func (r *Reentrant) Unlock(owner string) error {
	r.mu.Lock()
	if r.count == 0 || r.owner != owner {
		r.mu.Unlock()
		return zk.ErrNotLocked
	}
	r.count--
	last := r.count == 0
	r.mu.Unlock()
	if !last {
		return nil
	}
	return r.Queue.Unlock()
}

// Holds reports how many times owner holds the lock.
func (r *Reentrant) Holds(owner string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owner != owner {
		return 0
	}
	return r.count
}
