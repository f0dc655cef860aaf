package gozk

// RWLock is Apache Curator's InterProcessReadWriteLock on the real client:
// readers and writers queue in one directory, as ephemeral sequential
// nodes named read- and write-, ordered by sequence:
//
//	acquire:  create <dir>/read- or <dir>/write- ephemeral-sequential
//	          loop: children(<dir>) sorted by sequence
//	                writer: ours lowest → held; else watch our predecessor
//	                reader: no writer before ours → held;
//	                        else watch the first writer before ours
//	          loop when the watched node goes
//	release:  delete our node
//
// A writer waits for every node before it, readers and writers; a reader
// waits only for writers before it, so readers that queue back to back
// read together. Because every new node queues behind a waiting writer,
// readers that arrive after it wait too: the writer cannot starve.
//
// Holds end with the holder's session, as for the mutex: a reader paused
// past its session timeout loses its node, the writer behind it writes,
// and the reader, told nothing yet, still reads.
//
// Curator protects the names (StandardLockInternalsDriver creates the
// node withProtection(): _c_<guid>-write-0000000007), and so does the
// fixed recipe, through the queue's protected create: a create whose
// reply is lost is looked for by its GUID before it is tried again. The
// naive recipe (Naive) names its nodes read- and write- alone: the node of
// a create whose reply was lost cannot be told from anybody else's, the
// call fails, the next makes a second node, and the first — an orphan
// that lives as long as the session — blocks every node queued behind it
// (zk-rwlock-lost-create-reply).

import (
	"errors"
	"io"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Node name prefixes of readers and writers.
const (
	readPrefix  = "read-"
	writePrefix = "write-"
)

// RWLock is one client's side of a reader-writer lock: a reader's or a
// writer's.
type RWLock struct {
	Conn *zk.Conn
	Dir  string
	Read bool
	ACL  []zk.ACL
	// Naive names the nodes without a GUID (see above).
	Naive bool
	// Rand draws the GUIDs (crypto/rand if nil). Simulations pass a seeded
	// source so node names, and so runs, replay byte for byte.
	Rand io.Reader
	// Settle is the queue's (Queue.Settle), for the background delete.
	Settle func()

	path string
	// nodes is the queue recipe whose protected create (and guaranteed
	// delete) make and drop our node in the fixed recipe.
	nodes *Queue
}

// NewRWLock makes a reader's (read) or a writer's side of the lock under
// dir.
func NewRWLock(conn *zk.Conn, dir string, read bool) *RWLock {
	l := &RWLock{Conn: conn, Dir: dir, Read: read, ACL: zk.WorldACL(zk.PermAll)}
	l.nodes = NewQueue(conn, dir)
	l.nodes.Name = l.prefix()
	return l
}

// prefix is our node's name before its sequence number (after the GUID
// when protected).
func (l *RWLock) prefix() string {
	if l.Read {
		return readPrefix
	}
	return writePrefix
}

// create makes our node: protected and retried as the queue does, or,
// naive, once.
func (l *RWLock) create() (string, error) {
	if l.Naive || l.nodes == nil {
		return createSequential(l.Conn, l.Dir+"/"+l.prefix(), l.ACL)
	}
	q := l.nodes
	q.Conn, q.ACL, q.Rand, q.Settle = l.Conn, l.ACL, l.Rand, l.Settle
	defer func() { q.GUID = "" }() // a fresh GUID for the next Lock
	return q.create()
}

// drop deletes our node after a failed wait: the fixed recipe keeps trying
// in the background when the delete goes unanswered.
func (l *RWLock) drop(path string) {
	if l.Naive || l.nodes == nil {
		l.Conn.Delete(path, -1)
		return
	}
	l.nodes.Conn, l.nodes.Settle = l.Conn, l.Settle
	l.nodes.delete(path)
}

// Stop ends the background deletes (call it before closing the
// connection) and waits for them.
func (l *RWLock) Stop() {
	if l.nodes != nil {
		l.nodes.Stop()
	}
}

// Lock queues our node and waits for our turn; it returns the node's path.
func (l *RWLock) Lock() (string, error) {
	if l.path != "" {
		return "", zk.ErrDeadlock
	}
	path, err := l.create()
	if err != nil {
		return "", err
	}
	ours := path[strings.LastIndexByte(path, '/')+1:]
	for {
		kids, _, err := l.Conn.Children(l.Dir)
		if err != nil {
			l.drop(path)
			return "", err
		}
		sortBySequence(kids)
		i := indexOf(kids, ours)
		if i < 0 {
			return "", ErrGone
		}
		watch := l.blocker(kids, i)
		if watch == "" {
			l.path = path
			return path, nil
		}
		_, _, ch, err := l.Conn.GetW(l.Dir + "/" + watch)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			l.drop(path)
			return "", err
		}
		if ev := <-ch; ev.Err != nil && errors.Is(ev.Err, zk.ErrClosing) {
			return "", ev.Err
		}
	}
}

// blocker is the node ours (at index i of the sorted children) must wait
// for, or "" when we hold: a writer's predecessor; a reader's first
// earlier writer (Curator's readLockPredicate watches that one).
func (l *RWLock) blocker(kids []string, i int) string {
	if !l.Read {
		if i == 0 {
			return ""
		}
		return kids[i-1]
	}
	for _, k := range kids[:i] {
		if writer(k) {
			return k
		}
	}
	return ""
}

// writer says whether a node of the lock is a writer's, protected name
// (_c_<guid>-write-…) or not: Curator's readLockPredicate asks whether
// the name contains __WRIT__, not whether it starts with it, for the same
// reason.
func writer(name string) bool {
	if strings.HasPrefix(name, "_c_") {
		if i := strings.IndexByte(name[3:], '-'); i >= 0 {
			name = name[3+i+1:]
		}
	}
	return strings.HasPrefix(name, writePrefix)
}

// Path is our node while we hold the lock.
func (l *RWLock) Path() string { return l.path }

// Unlock deletes our node. The fixed recipe's delete is guaranteed, as
// Curator's release (LockInternals.deleteOurPath, guaranteed()): when it
// gets no answer it goes on in the background, or the node, held by a
// live session, would block every reader and writer queued behind it.
func (l *RWLock) Unlock() error {
	if l.path == "" {
		return zk.ErrNotLocked
	}
	path := l.path
	l.path = ""
	if !l.Naive && l.nodes != nil {
		l.nodes.Conn, l.nodes.Settle = l.Conn, l.Settle
		return guaranteedRelease(l.nodes, path)
	}
	err := l.Conn.Delete(path, -1)
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
