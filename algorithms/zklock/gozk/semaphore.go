package gozk

// Semaphore is Apache Curator's InterProcessSemaphoreV2 on the real
// client: a lease is an ephemeral sequential node under <dir>/leases, and
// a short mutex (the queue recipe, under <dir>/locks) lets one acquirer
// at a time count the leases:
//
//	acquire:  lock <dir>/locks
//	          create <dir>/leases/lease- ephemeral-sequential
//	          loop: children(<dir>/leases, watch)
//	                ours missing   → the session is gone: fail
//	                count <= N     → leased
//	                else wait for the watch (a lease was returned), loop
//	          unlock <dir>/locks
//	release:  delete our lease node
//
// The acquirer that waits for a lease keeps the mutex, so the others
// queue behind it in the mutex, in order. A lease lasts as long as its
// holder's session: when the session expires (a pause past the session
// timeout, a partition), the ensemble deletes the lease node, the waiter
// counts N-1 leases and takes one, while the old holder, told nothing
// until it hears from the ensemble again, goes on working: N+1 holders.
// Curator's answer is the same as for its mutex: stop acting on
// SUSPENDED, and fence the resource.

import (
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Semaphore is one client's handle on a counting semaphore of Leases
// leases.
type Semaphore struct {
	Conn   *zk.Conn
	Dir    string
	Leases int
	ACL    []zk.ACL
	// Mutex guards the counting (Curator's "locks" child).
	Mutex *Queue

	path string
}

// NewSemaphore makes the recipe on conn with leases leases under dir.
func NewSemaphore(conn *zk.Conn, dir string, leases int) *Semaphore {
	return &Semaphore{Conn: conn, Dir: dir, Leases: leases, ACL: zk.WorldACL(zk.PermAll), Mutex: NewQueue(conn, dir+"/locks")}
}

func (s *Semaphore) leases() string { return s.Dir + "/leases" }

// Acquire takes a lease and returns the path of its node.
func (s *Semaphore) Acquire() (string, error) {
	if s.path != "" {
		return "", zk.ErrDeadlock
	}
	if _, err := s.Mutex.Lock(); err != nil {
		return "", err
	}
	path, err := s.lease()
	// The mutex only orders the counting: give it back, leased or not.
	if uerr := s.Mutex.Unlock(); err == nil && uerr != nil {
		s.Conn.Delete(path, -1)
		return "", uerr
	}
	if err != nil {
		return "", err
	}
	s.path = path
	return path, nil
}

// lease creates our lease node and waits, holding the mutex, until at
// most Leases nodes exist.
func (s *Semaphore) lease() (string, error) {
	path, err := createSequential(s.Conn, s.leases()+"/lease-", s.ACL)
	if err != nil {
		return "", err
	}
	ours := path[strings.LastIndexByte(path, '/')+1:]
	for {
		kids, _, ch, err := s.Conn.ChildrenW(s.leases())
		if err != nil {
			s.Conn.Delete(path, -1)
			return "", err
		}
		if indexOf(kids, ours) < 0 {
			return "", ErrGone
		}
		if len(kids) <= s.Leases {
			return path, nil
		}
		if ev := <-ch; ev.Err != nil && errors.Is(ev.Err, zk.ErrClosing) {
			return "", ev.Err
		}
	}
}

// Path is our lease node while we hold a lease.
func (s *Semaphore) Path() string { return s.path }

// Release deletes our lease node.
func (s *Semaphore) Release() error {
	if s.path == "" {
		return zk.ErrNotLocked
	}
	path := s.path
	s.path = ""
	err := s.Conn.Delete(path, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
		return nil
	}
	return err
}

// createSequential creates an ephemeral sequential node at prefix, making
// its parents first if they are missing.
func createSequential(conn *zk.Conn, prefix string, acl []zk.ACL) (string, error) {
	for attempt := 0; ; attempt++ {
		path, err := conn.Create(prefix, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if !errors.Is(err, zk.ErrNoNode) || attempt > 0 {
			return path, err
		}
		dir := prefix[:strings.LastIndexByte(prefix, '/')]
		for i := 1; i <= len(dir); i++ {
			if i < len(dir) && dir[i] != '/' {
				continue
			}
			if _, err := conn.Create(dir[:i], nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return "", err
			}
		}
	}
}
