// Package gozk holds ZooKeeper lock recipes written against the real
// client, github.com/go-zookeeper/zk, so the same code runs against the
// simulated ensemble (sim/zk/ensemble) and a real ZooKeeper.
//
// Queue is the lock recipe of the ZooKeeper documentation as Apache
// Curator's InterProcessMutex implements it:
//
//	acquire:  create <dir>/_c_<guid>-lock- ephemeral-sequential
//	          loop: children(<dir>) sorted by sequence
//	                ours lowest → held
//	                getData(predecessor, watch) → wait for it, loop
//	release:  delete our node
//
// Two failure paths decide whether it survives a flaky connection, and
// Queue has both the fixed and the naive behaviour (Naive):
//
//   - A create whose reply is lost may have happened. Curator looks for a
//     child carrying its GUID and adopts it; the lookup itself must be
//     retried until it gets an answer (findProtectedNodeInForeground runs
//     inside a retry loop). The naive variant gives up on the lookup at
//     its first error and creates a second node: the first, an orphan of a
//     live session, sits ahead of it in the queue and it waits on its own
//     orphan for as long as the session lives.
//   - A release whose DELETE gets no reply leaves the node, and the lock
//     blocked, for as long as the session lives. Curator's guaranteed()
//     delete retries it in the background until it succeeds or the node or
//     the session is gone; the naive variant returns the error.
//
// The recipe does not protect against a session that expires while the
// holder believes it holds (a partition, a pause): the holder must stop
// acting when its connection state says so, and only a fencing token
// checked by the resource makes a stale holder harmless.
package gozk

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// ErrGone means our node disappeared while we waited: the session expired
// and the ensemble removed it.
var ErrGone = errors.New("gozk: our lock node is gone (session expired)")

// Queue is one client's handle on a queue lock.
type Queue struct {
	Conn *zk.Conn
	Dir  string
	ACL  []zk.ACL
	// Naive keeps the old behaviour: a failed lookup after a lost create
	// makes a second node, and a failed release is not retried.
	Naive bool
	// Backoff is the pause between retries (Curator's RetryPolicy; the
	// sleep is virtual inside the simulation).
	Backoff time.Duration
	// Rand draws the GUIDs (crypto/rand if nil). Simulations pass a seeded
	// source so node names, and so runs, replay byte for byte.
	Rand io.Reader
	// Name is what follows the GUID in our node's name: "lock-", as
	// Curator's mutex names it, when empty. The reader-writer lock
	// reuses the protected create with "read-" and "write-".
	Name string
	// Settle, if set, returns once every other goroutine has gone as far
	// as it can at this instant; simulations set it (the ensemble's
	// Settle). The guaranteed delete runs in a goroutine of its own and
	// pauses Backoff between tries, as a Lock of the same handle does
	// between its own: when both pauses end at one instant, which of the
	// two requests go-zookeeper sends first was the Go scheduler's choice
	// (TestQueueAgainAfterLostDeleteReplays). The delete settles after its
	// pause, so the client's own request goes first.
	Settle func()
	// GUID, if set, is reused instead of a fresh one, and Lock first looks
	// for a node carrying it: what Curator's retry loop does when it goes
	// on with a protected create after replacing an expired ZooKeeper
	// handle. The fixed recipe adopts such a node only if the current
	// session owns it, and deletes it otherwise (the fix of CURATOR-604);
	// the naive one adopts it whoever owns it.
	GUID string
	// Replaced, if set, reports that the owner has closed Conn to replace
	// it (a session declared LOST): the retry loops then stop and Lock
	// returns its error at once, so the caller can Resume on the new
	// handle — Curator's retry loop takes the current handle at each
	// attempt. Without it they would retry on the closed handle until
	// they give up.
	Replaced func() bool

	path string
	// tried is the GUID of the last create, kept after Lock returns so
	// Resume can go on with it.
	tried string

	mu       sync.Mutex
	stop     chan struct{}
	deleting sync.WaitGroup
	// GuaranteedDeletes counts deletes finished in the background.
	GuaranteedDeletes int
}

// NewQueue makes the fixed recipe with a 100 ms backoff.
func NewQueue(conn *zk.Conn, dir string) *Queue {
	return &Queue{Conn: conn, Dir: dir, ACL: zk.WorldACL(zk.PermAll), Backoff: 100 * time.Millisecond}
}

// connectionLoss is go-zookeeper's way of saying "no answer": the request
// was flushed when the connection closed, or no server could be reached.
func connectionLoss(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer)
}

// retry says whether a request that got no answer is worth retrying on
// this handle: not once the owner has replaced it, nor once Stop was
// called. After Stop the handle is being closed, and a closed go-zookeeper
// handle (v1.0.4, queueRequest) fails every request at once with
// ErrConnectionClosed, which looks like a connection loss: a Lock still
// waiting — say in the process of a client that crashed while in it —
// would retry on it for ever, and the run's end could not wind it down.
func (q *Queue) retry() bool {
	return !q.stopped() && (q.Replaced == nil || !q.Replaced())
}

// Lock joins the queue and waits for its turn. It returns the path of our
// node.
func (q *Queue) Lock() (string, error) {
	if q.path != "" {
		return "", zk.ErrDeadlock
	}
	defer func() { q.GUID = "" }()
	path, err := q.create()
	if err != nil {
		return "", err
	}
	if err := q.wait(path); err != nil {
		// On a replaced handle the delete could only be retried on a
		// closed connection; the node is the old session's, and the
		// lookup in the new one finds it (and, fixed, deletes it).
		if !errors.Is(err, ErrGone) && q.retry() {
			q.delete(path)
		}
		return "", err
	}
	q.path = path
	return path, nil
}

// Resume moves the queue onto conn, a replacement handle with a new
// session, after Lock failed because its old handle was closed: the next
// Lock goes on with the GUID of the failed attempt and first looks for a
// node carrying it. That is what Curator's retry loop does when it has
// declared the session LOST and replaced the ZooKeeper handle in the
// middle of a protected create — and where CURATOR-604 bites: the old
// session's node may still be there. Call it between Lock calls, never
// during one.
func (q *Queue) Resume(conn *zk.Conn) {
	q.Conn = conn
	q.GUID = q.tried
}

// Path is our node while we hold the lock.
func (q *Queue) Path() string { return q.path }

// Unlock deletes our node: with the fixed recipe, a delete that gets no
// answer goes on in the background (guaranteed delete).
func (q *Queue) Unlock() error {
	if q.path == "" {
		return zk.ErrNotLocked
	}
	path := q.path
	q.path = ""
	err := q.Conn.Delete(path, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
		return nil
	}
	if q.Naive || !connectionLoss(err) {
		return err
	}
	q.guaranteedDelete(path)
	return nil
}

// guaranteedDelete retries the delete in the background until it is
// answered, the node is gone, the session that owned it is gone (then so
// is the node), or Stop is called.
func (q *Queue) guaranteedDelete(path string) {
	// The handle of this delete: Resume may move the queue to another
	// while the delete goes on.
	conn := q.Conn
	sid := conn.SessionID()
	// Add and Stop's check happen under q.mu, so every Add is ordered
	// before Stop's Wait (sync.WaitGroup: an Add from zero must happen
	// before the Wait), and none starts once Stop was called: the handle
	// is being closed, and a delete on it could only fail.
	q.mu.Lock()
	if q.stop == nil {
		q.stop = make(chan struct{})
	}
	stop := q.stop
	select {
	case <-stop:
		q.mu.Unlock()
		return
	default:
	}
	q.deleting.Add(1)
	q.mu.Unlock()
	go func() {
		defer q.deleting.Done()
		for {
			err := conn.Delete(path, -1)
			if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) || conn.SessionID() != sid {
				q.mu.Lock()
				q.GuaranteedDeletes++
				q.mu.Unlock()
				return
			}
			t := time.NewTimer(q.Backoff)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
				return
			}
			if q.Settle != nil {
				q.Settle()
			}
		}
	}()
}

// stopped reports whether Stop was called.
func (q *Queue) stopped() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop == nil {
		return false
	}
	select {
	case <-q.stop:
		return true
	default:
		return false
	}
}

func (q *Queue) stopCh() chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stop == nil {
		q.stop = make(chan struct{})
	}
	return q.stop
}

// Stop ends the background deletes (call it before closing the
// connection) and waits for them; a Lock under way stops retrying and
// returns its connection error (see retry).
func (q *Queue) Stop() {
	ch := q.stopCh()
	q.mu.Lock()
	select {
	case <-ch:
	default:
		close(ch)
	}
	q.mu.Unlock()
	q.deleting.Wait()
}

func (q *Queue) delete(path string) {
	if q.Naive {
		q.Conn.Delete(path, -1)
		return
	}
	if err := q.Conn.Delete(path, -1); connectionLoss(err) {
		q.guaranteedDelete(path)
	}
}

// create makes our node, retrying creates that got no answer; a retry
// first looks for a child carrying our GUID.
func (q *Queue) create() (string, error) {
	resume := q.GUID != ""
	if !resume {
		var guid [16]byte
		src := q.Rand
		if src == nil {
			src = rand.Reader
		}
		if _, err := io.ReadFull(src, guid[:]); err != nil {
			return "", err
		}
		q.GUID = fmt.Sprintf("%x", guid)
	}
	q.tried = q.GUID
	name := q.Name
	if name == "" {
		name = "lock-"
	}
	prefix := "_c_" + q.GUID + "-" + name
	for attempt := 0; ; attempt++ {
		if attempt > 0 || resume {
			path, found, err := q.findProtected(prefix)
			if err != nil {
				return "", err
			}
			if found {
				return path, nil
			}
		}
		path, err := q.Conn.Create(q.Dir+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, q.ACL)
		switch {
		case err == nil:
			return path, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := q.makeParents(); err != nil {
				return "", err
			}
		case errors.Is(err, zk.ErrSessionExpired):
			// The node cannot exist: its session is gone. Try again
			// (go-zookeeper makes a new session by itself).
		case connectionLoss(err) && q.retry():
			time.Sleep(q.Backoff)
		default:
			return "", err
		}
		if attempt > 50 {
			return "", fmt.Errorf("gozk: giving up creating our node: %w", err)
		}
	}
}

// findProtected looks for the child named with our GUID. The fixed recipe
// retries the lookup until it gets an answer; the naive one reports "not
// found" at the first error, and its caller makes a second node.
func (q *Queue) findProtected(prefix string) (string, bool, error) {
	for i := 0; ; i++ {
		path, found, err := q.lookup(prefix)
		if err == nil {
			return path, found, nil
		}
		if !q.retry() {
			return "", false, err
		}
		if q.Naive || !connectionLoss(err) || i > 50 {
			if q.Naive && connectionLoss(err) {
				q.pauseAfterLoss()
			}
			return "", false, nil
		}
		time.Sleep(q.Backoff)
	}
}

// lookup lists our directory once and returns the child named with our
// GUID, if our session owns it. CURATOR-604: a node of an earlier session
// of ours may still be there (the ensemble has not expired that session
// yet); it will vanish under us, so it is not ours to hold, and we delete
// it. The owner check is part of the lookup: when it goes unanswered the
// whole lookup is, and it is retried. Taking an unanswered check for "not
// there" made a second node queued behind our own first one, which our
// live session keeps for good (found by 'locklab explore gozk-queue
// --faults drop').
func (q *Queue) lookup(prefix string) (string, bool, error) {
	kids, _, err := q.Conn.Children(q.Dir)
	if err != nil {
		return "", false, err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		path := q.Dir + "/" + k
		if q.Naive {
			return path, true, nil
		}
		ok, st, err := q.Conn.Exists(path)
		if err != nil {
			return "", false, err
		}
		if !ok {
			continue
		}
		if st.EphemeralOwner == q.Conn.SessionID() {
			return path, true, nil
		}
		if err := q.Conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return "", false, err
		}
	}
	return "", false, nil
}

// pauseAfterLoss waits the retry backoff (at least a millisecond) before
// the naive recipe, its lookup lost, creates again. Without the pause the
// create races go-zookeeper's own connection loop (v1.0.4, Conn.loop): the
// loop's flushRequests fails our lookup with ErrConnectionClosed, which
// wakes us, and the loop goes straight on to connect, where, back round to
// the server it last used, it fails every unsent request with ErrNoServer
// (flushUnsentRequests) before waiting a second. Both goroutines are
// runnable at once and neither passes through the simulation's kernel, so
// whether our create is queued before that flush — failed with
// ErrNoServer, then the retried lookup finds our node and no orphan is
// left — or after it — sent on the next connection, the second node — was
// up to the Go scheduler: zk-lost-create-reply's trace changed about once
// in a few hundred runs under -race. After the pause, the loop is asleep
// in its one-second wait and the create is always sent on the next
// connection. The fixed recipe already sleeps its backoff there.
func (q *Queue) pauseAfterLoss() {
	time.Sleep(max(q.Backoff, time.Millisecond))
}

func (q *Queue) makeParents() error {
	for i := 1; i <= len(q.Dir); i++ {
		if i < len(q.Dir) && q.Dir[i] != '/' {
			continue
		}
		if _, err := q.Conn.Create(q.Dir[:i], nil, 0, q.ACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// wait loops until our node is the lowest, watching only our
// predecessor. Connection losses are retried (the node is ephemeral: it
// survives them as long as the session does).
func (q *Queue) wait(path string) error {
	ours := path[strings.LastIndexByte(path, '/')+1:]
	for {
		kids, _, err := q.Conn.Children(q.Dir)
		if connectionLoss(err) && !q.Naive && q.retry() {
			time.Sleep(q.Backoff)
			continue
		}
		if err != nil {
			return err
		}
		sortBySequence(kids)
		i := indexOf(kids, ours)
		if i < 0 {
			return ErrGone
		}
		if i == 0 {
			return nil
		}
		_, _, ch, err := q.Conn.GetW(q.Dir + "/" + kids[i-1])
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if connectionLoss(err) && !q.Naive && q.retry() {
			time.Sleep(q.Backoff)
			continue
		}
		if err != nil {
			return err
		}
		ev := <-ch
		if ev.Err != nil && (q.Naive || errors.Is(ev.Err, zk.ErrClosing)) {
			return ev.Err
		}
		// A watch ended by the session's expiry or a closed connection:
		// look again (our node tells whether the session survived).
	}
}

// Sequence is the ten-digit suffix of a sequential node's name.
func Sequence(name string) (int64, bool) {
	if len(name) < 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	return n, err == nil
}

func sortBySequence(names []string) {
	sort.SliceStable(names, func(i, j int) bool {
		a, _ := Sequence(names[i])
		b, _ := Sequence(names[j])
		return a < b
	})
}

func indexOf(names []string, s string) int {
	for i, n := range names {
		if n == s {
			return i
		}
	}
	return -1
}
