package gozk

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// Simple is the lock every tutorial starts with: one ephemeral node, and
// every waiter watches it. Each release wakes every waiter, all of them
// race to create the node, one wins and the rest watch again: n waiters
// cost about n²/2 watch notifications (the herd effect), against n for
// the queue.
type Simple struct {
	Conn *zk.Conn
	Path string
	ACL  []zk.ACL
}

// NewSimple makes the lock on the node at path (its parent must exist or
// be creatable).
func NewSimple(conn *zk.Conn, path string) *Simple {
	return &Simple{Conn: conn, Path: path, ACL: zk.WorldACL(zk.PermAll)}
}

// Lock creates the node, or waits for it to go and tries again.
func (s *Simple) Lock() error {
	for {
		_, err := s.Conn.Create(s.Path, nil, zk.FlagEphemeral, s.ACL)
		if err == nil {
			return nil
		}
		if errors.Is(err, zk.ErrNoNode) {
			parent := s.Path[:lastSlash(s.Path)]
			if _, err := s.Conn.Create(parent, nil, 0, s.ACL); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
			continue
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		ok, _, ch, err := s.Conn.ExistsW(s.Path)
		if err != nil {
			return err
		}
		if ok {
			<-ch
		}
	}
}

// Unlock deletes the node.
func (s *Simple) Unlock() error { return s.Conn.Delete(s.Path, -1) }

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return 0
}
