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

import (
	"errors"
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

	path string
}

// NewRWLock makes a reader's (read) or a writer's side of the lock under
// dir.
func NewRWLock(conn *zk.Conn, dir string, read bool) *RWLock {
	return &RWLock{Conn: conn, Dir: dir, Read: read, ACL: zk.WorldACL(zk.PermAll)}
}

// Lock queues our node and waits for our turn; it returns the node's path.
func (l *RWLock) Lock() (string, error) {
	if l.path != "" {
		return "", zk.ErrDeadlock
	}
	prefix := writePrefix
	if l.Read {
		prefix = readPrefix
	}
	path, err := createSequential(l.Conn, l.Dir+"/"+prefix, l.ACL)
	if err != nil {
		return "", err
	}
	ours := path[strings.LastIndexByte(path, '/')+1:]
	for {
		kids, _, err := l.Conn.Children(l.Dir)
		if err != nil {
			l.Conn.Delete(path, -1)
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
			l.Conn.Delete(path, -1)
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
		if strings.HasPrefix(k, writePrefix) {
			return k
		}
	}
	return ""
}

// Path is our node while we hold the lock.
func (l *RWLock) Path() string { return l.path }

// Unlock deletes our node.
func (l *RWLock) Unlock() error {
	if l.path == "" {
		return zk.ErrNotLocked
	}
	path := l.path
	l.path = ""
	err := l.Conn.Delete(path, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrSessionExpired) {
		return nil
	}
	return err
}
