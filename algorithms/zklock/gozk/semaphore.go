package gozk

// Semaphore is Apache Curator's InterProcessSemaphoreV2 on the real
// client: a lease is an ephemeral sequential node under <dir>/leases, and
// a short mutex (the queue recipe, under <dir>/locks) lets one acquirer
// at a time count the leases:
//
//	acquire:  lock <dir>/locks
//	          create <dir>/leases/_c_<guid>-lease- ephemeral-sequential
//	          loop: children(<dir>/leases, watch)
//	                ours missing   → the session is gone: fail
//	                count <= N     → leased
//	                else wait for the watch (a lease was returned), loop
//	          unlock <dir>/locks
//	release:  delete our lease node (guaranteed)
//
// The acquirer that waits for a lease keeps the mutex, so the others
// queue behind it in the mutex, in order. A lease lasts as long as its
// holder's session: when the session expires (a pause past the session
// timeout, a partition), the ensemble deletes the lease node, the waiter
// counts N-1 leases and takes one, while the old holder, told nothing
// until it hears from the ensemble again, goes on working: N+1 holders.
// Curator's answer is the same as for its mutex: stop acting on
// SUSPENDED, and fence the resource.
//
// Two flaky-connection paths are handled as Curator handles them, through
// the queue recipe's own code (Queue.create, Queue.delete): the lease is
// created withProtection() (InterProcessSemaphoreV2.internalAcquire1Lease),
// so a create whose reply is lost is looked for by its GUID before it is
// tried again — otherwise the first node, an orphan of a live session,
// would hold a permit for as long as the session lives; and a lease is
// returned with a guaranteed() delete (Lease.close, returnLease), retried
// in the background when it goes unanswered — otherwise the released
// lease would hold its permit the same way.

import (
	"errors"
	"io"
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
	// Rand draws the lease nodes' GUIDs (crypto/rand if nil); simulations
	// pass a seeded source so runs replay byte for byte.
	Rand io.Reader
	// Settle is the queue's (Queue.Settle), for the background delete.
	Settle func()

	path string
	// lease is the queue recipe whose protected create and guaranteed
	// delete make and return our lease node (Name "lease-").
	lease *Queue
}

// NewSemaphore makes the recipe on conn with leases leases under dir.
func NewSemaphore(conn *zk.Conn, dir string, leases int) *Semaphore {
	s := &Semaphore{Conn: conn, Dir: dir, Leases: leases, ACL: zk.WorldACL(zk.PermAll), Mutex: NewQueue(conn, dir+"/locks")}
	s.lease = NewQueue(conn, s.leases())
	s.lease.Name = "lease-"
	return s
}

// leaseQueue is the lease recipe on the semaphore's current settings.
func (s *Semaphore) leaseQueue() *Queue {
	q := s.lease
	q.Conn, q.ACL, q.Rand, q.Settle = s.Conn, s.ACL, s.Rand, s.Settle
	return q
}

// Stop ends the background deletes, the mutex's and the leases' (call it
// before closing the connection), and waits for them.
func (s *Semaphore) Stop() {
	s.Mutex.Stop()
	s.lease.Stop()
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
	path, err := s.take()
	// The mutex only orders the counting: give it back, leased or not.
	if uerr := s.Mutex.Unlock(); err == nil && uerr != nil {
		s.leaseQueue().delete(path)
		return "", uerr
	}
	if err != nil {
		return "", err
	}
	s.path = path
	return path, nil
}

// take creates our lease node, protected, and waits, holding the mutex,
// until at most Leases nodes exist.
func (s *Semaphore) take() (string, error) {
	q := s.leaseQueue()
	path, err := q.create()
	q.GUID = "" // a fresh GUID for the next lease
	if err != nil {
		return "", err
	}
	ours := path[strings.LastIndexByte(path, '/')+1:]
	for {
		kids, _, ch, err := s.Conn.ChildrenW(s.leases())
		if err != nil {
			q.delete(path)
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

// Release deletes our lease node; a delete that gets no answer goes on in
// the background (Curator's guaranteed()).
func (s *Semaphore) Release() error {
	if s.path == "" {
		return zk.ErrNotLocked
	}
	path := s.path
	s.path = ""
	return guaranteedRelease(s.leaseQueue(), path)
}

// guaranteedRelease deletes a held node through q: answered, or gone, it
// is done; unanswered (a connection loss), q retries it in the background
// until it is answered or the node or the session is gone.
func guaranteedRelease(q *Queue, path string) error {
	err := q.Conn.Delete(path, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
		return nil
	}
	if !connectionLoss(err) {
		return err
	}
	q.guaranteedDelete(path)
	return nil
}
