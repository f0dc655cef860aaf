// Package zk is a simulated ZooKeeper ensemble and its client, built on the
// locklab kernel (package sim).
//
// The ensemble is one linearizable server on a host named "zk" (a leader
// with its followers always in agreement is, to a client, one server). It
// keeps the parts of ZooKeeper that lock recipes depend on:
//
//   - sessions with a timeout, kept alive by any request from the client,
//     pings included; the server expires a session it has not heard from for
//     its timeout, measured on the server's own oscillator (ZooKeeper uses a
//     monotonic clock, so wall-clock jumps do not matter), and deletes the
//     session's ephemeral znodes in the same transaction;
//   - znodes: persistent, ephemeral, sequential and ephemeral-sequential,
//     the sequential suffix being the parent's child version (cversion)
//     written as ten zero-padded digits, as ZooKeeper does; every change is
//     one transaction with its own zxid, and each node keeps the zxid that
//     created it (czxid), which lock recipes can use as a fencing token;
//   - one-shot watches set by Exists, Get and Children, each fired at most
//     once per session and event (the server counts every notification it
//     sends: that is the herd effect's price), and re-registered with
//     SetWatches when a client reconnects, so an event missed while the
//     connection was down is delivered then.
//
// The client (Conn) is shaped after github.com/go-zookeeper/zk — Create,
// Delete, Children, Exists, Get with their W variants returning a Watch —
// and reports connection states as Apache Curator does: CONNECTED;
// SUSPENDED after no contact for two thirds of the session timeout (when the
// ZooKeeper client declares the connection lost); LOST when the server says
// the session expired, or, Curator's default, one session timeout after
// SUSPENDED without contact; RECONNECTED when contact comes back or a new
// session is made after LOST. A background process on the client host sends
// the pings and calls the state listeners, so the client learns of a state
// change while its main process is busy, and learns nothing while its host
// is paused.
//
// Every request, reply and watch notification is a message on the simulated
// network (ops CONNECT, CREATE, DELETE, CHILDREN, EXISTS, GETDATA, SETDATA,
// PING, SETWATCHES, CLOSE, and WATCH for notifications), so every fault
// applies: drops, delays, partitions, pauses.
package zk

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/sim"
)

// Create flags, as in go-zookeeper.
const (
	FlagEphemeral int32 = 1
	FlagSequence  int32 = 2
)

// NoTimeout makes Watch.Wait wait until the watch fires.
const NoTimeout = sim.NoTimeout

// Errors, named as in go-zookeeper.
var (
	ErrNoNode                  = errors.New("zk: node does not exist")
	ErrNodeExists              = errors.New("zk: node already exists")
	ErrNotEmpty                = errors.New("zk: node has children")
	ErrBadVersion              = errors.New("zk: version conflict")
	ErrBadArguments            = errors.New("zk: bad arguments")
	ErrNoChildrenForEphemerals = errors.New("zk: ephemeral nodes may not have children")
	ErrSessionExpired          = errors.New("zk: session has been expired by the server")
	// ErrConnectionLoss means no reply came in time: the request may or may
	// not have taken effect (the classic ZooKeeper ambiguity).
	ErrConnectionLoss = errors.New("zk: connection loss (no reply in time)")
	ErrClosing        = errors.New("zk: zookeeper is closing")
)

// Stat is a znode's metadata, as ZooKeeper returns it.
type Stat struct {
	Czxid          int64 // zxid of the transaction that created the node
	Mzxid          int64 // zxid of the last change of its data
	Pzxid          int64 // zxid of the last change of its children
	Version        int32 // data version
	Cversion       int32 // child version: the next sequential suffix
	EphemeralOwner int64 // session id of the owner, 0 if persistent
	NumChildren    int32
	DataLength     int32
}

// EventType is the kind of a watch event.
type EventType int

const (
	EventNodeCreated EventType = iota + 1
	EventNodeDeleted
	EventNodeDataChanged
	EventNodeChildrenChanged
	// EventNotWatching ends a watch that will never fire: its session
	// expired (Err says why).
	EventNotWatching
)

func (t EventType) String() string {
	switch t {
	case EventNodeCreated:
		return "NodeCreated"
	case EventNodeDeleted:
		return "NodeDeleted"
	case EventNodeDataChanged:
		return "NodeDataChanged"
	case EventNodeChildrenChanged:
		return "NodeChildrenChanged"
	case EventNotWatching:
		return "NotWatching"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is a watch notification.
type Event struct {
	Type EventType
	Path string
	Err  error
}

func (e Event) String() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %s (%v)", e.Type, e.Path, e.Err)
	}
	return fmt.Sprintf("%s %s", e.Type, e.Path)
}

// State is a connection state as Curator reports it.
type State int

const (
	// Connecting is the state before the first session; listeners never
	// see it.
	Connecting State = iota
	Connected
	Suspended
	Reconnected
	Lost
	Closed
)

func (s State) String() string {
	switch s {
	case Connecting:
		return "CONNECTING"
	case Connected:
		return "CONNECTED"
	case Suspended:
		return "SUSPENDED"
	case Reconnected:
		return "RECONNECTED"
	case Lost:
		return "LOST"
	case Closed:
		return "CLOSED"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// IsConnected reports whether the state is one in which requests are
// expected to succeed (CONNECTED or RECONNECTED).
func (s State) IsConnected() bool { return s == Connected || s == Reconnected }

// Sequence parses the ten-digit suffix ZooKeeper appends to a sequential
// node's name ("lock-0000000042" → 42). ok is false if there is none.
func Sequence(name string) (seq int64, ok bool) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if len(name) < 10 {
		return 0, false
	}
	digits := name[len(name)-10:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

func sessionName(id int64) string { return fmt.Sprintf("0x%x", id) }

func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

func baseOf(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

func validPath(path string) bool {
	if path == "/" {
		return true
	}
	if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//") {
		return false
	}
	return true
}

// oscillator is a host clock's reading without its jumps: what a monotonic
// clock on that host shows. Differences of it measure elapsed time as the
// host's oscillator counts it (rate drift included, wall-clock jumps not).
func oscillator(c *sim.Clock, t time.Duration) time.Duration {
	r := c.Local(t)
	for _, ch := range c.Jumps() {
		if ch.At <= t {
			r -= ch.Jump
		}
	}
	return r
}
