package zk

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/sim"
)

// DefaultServerName is the ensemble's host name.
const DefaultServerName = "zk"

// Server is the simulated ensemble: one linearizable server. All its methods
// run under the baton, at the instant a request arrives.
type Server struct {
	Host *sim.Host

	// Notifications counts the watch notifications sent: one per watching
	// session per event, as ZooKeeper sends them.
	Notifications int64
	// SessionsCreated and SessionsExpired count sessions; NodesCreated
	// counts znodes created.
	SessionsCreated int64
	SessionsExpired int64
	NodesCreated    int64

	w            *sim.World
	zxid         int64
	lastSession  int64
	nodes        map[string]*znode
	sessions     map[int64]*session
	dataWatches  map[string][]int64 // set by exists and getData
	childWatches map[string][]int64 // set by getChildren
	conns        []*Conn
}

type znode struct {
	data     []byte
	stat     Stat
	children map[string]bool
}

type session struct {
	id         int64
	timeout    time.Duration
	conn       *Conn
	deadline   time.Duration // true time
	expiry     *sim.Event
	ephemerals map[string]bool
}

// reply is what travels back to the client: a value or an error, and the
// server's last zxid (ZooKeeper's reply header).
type reply struct {
	val  any
	err  error
	zxid int64
}

// NewServer starts an ensemble on a new host called name (DefaultServerName
// if empty) with the given clock (nil: true time).
func NewServer(w *sim.World, name string, clock *sim.Clock) *Server {
	if name == "" {
		name = DefaultServerName
	}
	s := &Server{
		Host:         w.NewHost(name, clock),
		w:            w,
		nodes:        map[string]*znode{"/": {children: map[string]bool{}}},
		sessions:     map[int64]*session{},
		dataWatches:  map[string][]int64{},
		childWatches: map[string][]int64{},
	}
	return s
}

// Zxid is the id of the last transaction.
func (s *Server) Zxid() int64 { return s.zxid }

// Node returns a znode's data and stat as the server holds them now (for
// tests and reports; clients use Get).
func (s *Server) Node(path string) ([]byte, *Stat, bool) {
	n, ok := s.nodes[path]
	if !ok {
		return nil, nil, false
	}
	st := n.stat
	return n.data, &st, true
}

// ChildrenOf lists a znode's children in sorted order (for tests and
// reports).
func (s *Server) ChildrenOf(path string) []string {
	n, ok := s.nodes[path]
	if !ok {
		return nil
	}
	return sortedSet(n.children)
}

// Alive reports whether a session exists on the server.
func (s *Server) Alive(sessionID int64) bool { return s.sessions[sessionID] != nil }

// Orphans lists the ephemeral znodes that exist now although their owner
// never learned it has them: the reply to the create was lost and the owner
// never named the node in a later successful request. Each blocks whatever
// waits on it for as long as its owner's session lives.
func (s *Server) Orphans() []string {
	var out []string
	for _, path := range sortedKeys(s.nodes) {
		n := s.nodes[path]
		ss := s.sessions[n.stat.EphemeralOwner]
		if n.stat.EphemeralOwner == 0 || ss == nil {
			continue
		}
		if !ss.conn.known[path] {
			out = append(out, path)
		}
	}
	return out
}

// serve runs one request of session sid: it fails with ErrSessionExpired if
// the server no longer knows the session, and otherwise counts as contact.
func (s *Server) serve(sid int64, fn func(ss *session) (any, error)) (any, string) {
	ss := s.sessions[sid]
	if ss == nil {
		return reply{err: ErrSessionExpired, zxid: s.zxid}, "session " + sessionName(sid) + " expired"
	}
	s.touch(ss)
	val, err := fn(ss)
	r := reply{val: val, err: err, zxid: s.zxid}
	return r, summarize(r)
}

// WireSize is about the bytes the reply takes on the wire: what the work
// budget counts (sim/budget.go). A child list grows with the children (a
// thousand waiters each listing a thousand children is a million names),
// every other reply is a few dozen bytes.
func (r reply) WireSize() int {
	n := 16 // header: xid, zxid, error code
	if c, ok := r.val.(childrenResult); ok {
		for _, name := range c.children {
			n += 4 + len(name)
		}
	}
	return n
}

func summarize(r reply) string {
	if r.err != nil {
		return strings.TrimPrefix(r.err.Error(), "zk: ")
	}
	switch v := r.val.(type) {
	case nil:
		return "ok"
	case createResult:
		return fmt.Sprintf("created %s (czxid %d)", v.path, v.stat.Czxid)
	case existsResult:
		if v.stat == nil {
			return "does not exist"
		}
		return fmt.Sprintf("exists (czxid %d, owner %s)", v.stat.Czxid, ownerName(v.stat.EphemeralOwner))
	case childrenResult:
		return fmt.Sprintf("%d children", len(v.children))
	case getResult:
		return fmt.Sprintf("%d bytes (version %d)", len(v.data), v.stat.Version)
	case connectResult:
		return fmt.Sprintf("session %s (timeout %v)", sessionName(v.id), v.timeout)
	default:
		return "ok"
	}
}

func ownerName(id int64) string {
	if id == 0 {
		return "none"
	}
	return sessionName(id)
}

// touch records contact: the session now expires one timeout from now, as
// the server's oscillator counts it (jumps of its wall clock do not matter).
// ZooKeeper rounds deadlines up to its tick; this server does not.
func (s *Server) touch(ss *session) {
	now := s.w.Now()
	ss.deadline = now + s.Host.Clock.TrueDuration(now, ss.timeout)
	if ss.expiry == nil {
		s.armExpiry(ss)
	}
}

// armExpiry schedules the expiry check at the session's deadline. When it
// fires and the session was touched meanwhile, it re-arms at the new
// deadline: one pending event per session, whatever the request rate.
func (s *Server) armExpiry(ss *session) {
	ss.expiry = s.w.At(ss.deadline, func() {
		ss.expiry = nil
		if s.sessions[ss.id] != ss {
			return
		}
		if s.w.Now() < ss.deadline {
			s.armExpiry(ss)
			return
		}
		s.SessionsExpired++
		s.w.Tracef(s.Host.Name, "session %s of %s expired: not heard from for %v", sessionName(ss.id), ss.conn.Host.Name, ss.timeout)
		s.closeSession(ss)
	})
}

// connect creates a session (a transaction of its own).
func (s *Server) connect(c *Conn, timeout time.Duration) (any, string) {
	s.zxid++
	s.lastSession++
	ss := &session{id: s.lastSession, timeout: timeout, conn: c, ephemerals: map[string]bool{}}
	s.sessions[ss.id] = ss
	s.SessionsCreated++
	s.touch(ss)
	r := reply{val: connectResult{id: ss.id, timeout: timeout}, zxid: s.zxid}
	return r, summarize(r)
}

type connectResult struct {
	id      int64
	timeout time.Duration
}

// closeSession ends a session in one transaction: its watches go, and its
// ephemeral nodes are deleted, which fires the watches of others.
func (s *Server) closeSession(ss *session) {
	s.zxid++
	z := s.zxid
	delete(s.sessions, ss.id)
	if ss.expiry != nil {
		ss.expiry.Cancel()
		ss.expiry = nil
	}
	s.dropWatches(ss.id)
	for _, path := range sortedSet(ss.ephemerals) {
		s.w.Tracef(s.Host.Name, "delete ephemeral %s of session %s", path, sessionName(ss.id))
		s.deleteNode(path, z)
	}
}

// dropWatches forgets every watch of a session (its connection is gone).
func (s *Server) dropWatches(sid int64) {
	for _, table := range []map[string][]int64{s.dataWatches, s.childWatches} {
		for _, path := range sortedKeys(table) {
			sids := table[path]
			kept := sids[:0:0]
			for _, x := range sids {
				if x != sid {
					kept = append(kept, x)
				}
			}
			if len(kept) == 0 {
				delete(table, path)
			} else {
				table[path] = kept
			}
		}
	}
}

func addWatch(table map[string][]int64, path string, sid int64) {
	for _, x := range table[path] {
		if x == sid {
			return // one watch per session and path, as ZooKeeper keeps them
		}
	}
	table[path] = append(table[path], sid)
}

// fire triggers the one-shot watches of path in table: each watching
// session is notified once and the watches are gone. Sessions in suppress
// were already notified of this event through another table.
func (s *Server) fire(table map[string][]int64, path string, t EventType, suppress map[int64]bool) {
	sids := table[path]
	if len(sids) == 0 {
		return
	}
	delete(table, path)
	for _, sid := range sids {
		if suppress[sid] {
			continue
		}
		if suppress != nil {
			suppress[sid] = true
		}
		s.notify(sid, Event{Type: t, Path: path})
	}
}

// notify sends one watch notification to a session's client.
func (s *Server) notify(sid int64, ev Event) {
	ss := s.sessions[sid]
	if ss == nil {
		return
	}
	s.Notifications++
	c := ss.conn
	s.w.Tracef(s.Host.Name, "notify %s (session %s): %s", c.Host.Name, sessionName(sid), ev)
	s.w.Net.Send(&sim.Message{
		Conn: c.wire, From: s.Host.Name, To: c.Host.Name, Client: c.Host.Name,
		Dir: sim.Reply, Op: "WATCH", Summary: "WATCH " + ev.String(),
	}, func() { c.deliver(sid, ev) })
}

// create adds a znode (ZooKeeper's create).
func (s *Server) create(ss *session, path string, data []byte, flags int32) (createResult, error) {
	if !validPath(path) || path == "/" || flags&^(FlagEphemeral|FlagSequence) != 0 {
		return createResult{}, ErrBadArguments
	}
	parentPath := parentOf(path)
	parent, ok := s.nodes[parentPath]
	if !ok {
		return createResult{}, ErrNoNode
	}
	if parent.stat.EphemeralOwner != 0 {
		return createResult{}, ErrNoChildrenForEphemerals
	}
	if flags&FlagSequence != 0 {
		path += fmt.Sprintf("%010d", parent.stat.Cversion)
	}
	if _, exists := s.nodes[path]; exists {
		return createResult{}, ErrNodeExists
	}
	s.zxid++
	n := &znode{data: append([]byte(nil), data...), children: map[string]bool{}}
	n.stat = Stat{Czxid: s.zxid, Mzxid: s.zxid, Pzxid: s.zxid, DataLength: int32(len(data))}
	if flags&FlagEphemeral != 0 {
		n.stat.EphemeralOwner = ss.id
		ss.ephemerals[path] = true
	}
	s.nodes[path] = n
	parent.children[baseOf(path)] = true
	parent.stat.Cversion++
	parent.stat.NumChildren++
	parent.stat.Pzxid = s.zxid
	s.NodesCreated++
	s.fire(s.dataWatches, path, EventNodeCreated, nil)
	s.fire(s.childWatches, parentPath, EventNodeChildrenChanged, nil)
	return createResult{path: path, stat: n.stat}, nil
}

type createResult struct {
	path string
	stat Stat
}

// delete removes a childless znode, if version matches (-1: any).
func (s *Server) delete(path string, version int32) error {
	n, ok := s.nodes[path]
	if !ok || path == "/" {
		return ErrNoNode
	}
	if version != -1 && version != n.stat.Version {
		return ErrBadVersion
	}
	if len(n.children) > 0 {
		return ErrNotEmpty
	}
	s.zxid++
	s.deleteNode(path, s.zxid)
	return nil
}

// deleteNode removes a node within transaction zxid and fires the watches:
// data and child watches of the node (NodeDeleted, once per session), then
// the child watches of its parent.
func (s *Server) deleteNode(path string, zxid int64) {
	n, ok := s.nodes[path]
	if !ok {
		return
	}
	delete(s.nodes, path)
	if owner := s.sessions[n.stat.EphemeralOwner]; owner != nil {
		delete(owner.ephemerals, path)
	}
	parentPath := parentOf(path)
	if parent, ok := s.nodes[parentPath]; ok {
		delete(parent.children, baseOf(path))
		parent.stat.Cversion++
		parent.stat.NumChildren--
		parent.stat.Pzxid = zxid
	}
	notified := map[int64]bool{}
	s.fire(s.dataWatches, path, EventNodeDeleted, notified)
	s.fire(s.childWatches, path, EventNodeDeleted, notified)
	s.fire(s.childWatches, parentPath, EventNodeChildrenChanged, nil)
}

type existsResult struct{ stat *Stat }

// exists returns the stat of a node or nil; with watch it leaves a watch
// that fires when the node is created, changed or deleted.
func (s *Server) exists(ss *session, path string, watch bool) existsResult {
	if watch {
		addWatch(s.dataWatches, path, ss.id)
	}
	n, ok := s.nodes[path]
	if !ok {
		return existsResult{}
	}
	st := n.stat
	return existsResult{stat: &st}
}

type getResult struct {
	data []byte
	stat Stat
}

// getData returns a node's data; with watch (only if the node exists) it
// leaves a watch for its change or deletion.
func (s *Server) getData(ss *session, path string, watch bool) (getResult, error) {
	n, ok := s.nodes[path]
	if !ok {
		return getResult{}, ErrNoNode
	}
	if watch {
		addWatch(s.dataWatches, path, ss.id)
	}
	return getResult{data: append([]byte(nil), n.data...), stat: n.stat}, nil
}

// setData replaces a node's data if version matches (-1: any).
func (s *Server) setData(path string, data []byte, version int32) (Stat, error) {
	n, ok := s.nodes[path]
	if !ok {
		return Stat{}, ErrNoNode
	}
	if version != -1 && version != n.stat.Version {
		return Stat{}, ErrBadVersion
	}
	s.zxid++
	n.data = append([]byte(nil), data...)
	n.stat.Version++
	n.stat.Mzxid = s.zxid
	n.stat.DataLength = int32(len(data))
	s.fire(s.dataWatches, path, EventNodeDataChanged, nil)
	return n.stat, nil
}

type childrenResult struct {
	children []string
	stat     Stat
}

// getChildren lists a node's children (sorted; ZooKeeper promises no
// order); with watch (only if the node exists) it leaves a child watch.
func (s *Server) getChildren(ss *session, path string, watch bool) (childrenResult, error) {
	n, ok := s.nodes[path]
	if !ok {
		return childrenResult{}, ErrNoNode
	}
	if watch {
		addWatch(s.childWatches, path, ss.id)
	}
	return childrenResult{children: sortedSet(n.children), stat: n.stat}, nil
}

// setWatches re-registers a reconnecting client's watches, firing at once
// those whose event happened after relZxid, the last zxid the client saw
// (ZooKeeper's SetWatches): a missed deletion or change is not lost.
func (s *Server) setWatches(ss *session, relZxid int64, data, exist, child []string) {
	for _, path := range data {
		n, ok := s.nodes[path]
		switch {
		case !ok:
			s.notify(ss.id, Event{Type: EventNodeDeleted, Path: path})
		case n.stat.Mzxid > relZxid:
			s.notify(ss.id, Event{Type: EventNodeDataChanged, Path: path})
		default:
			addWatch(s.dataWatches, path, ss.id)
		}
	}
	for _, path := range exist {
		if _, ok := s.nodes[path]; ok {
			s.notify(ss.id, Event{Type: EventNodeCreated, Path: path})
		} else {
			addWatch(s.dataWatches, path, ss.id)
		}
	}
	for _, path := range child {
		n, ok := s.nodes[path]
		switch {
		case !ok:
			s.notify(ss.id, Event{Type: EventNodeDeleted, Path: path})
		case n.stat.Pzxid > relZxid:
			s.notify(ss.id, Event{Type: EventNodeChildrenChanged, Path: path})
		default:
			addWatch(s.childWatches, path, ss.id)
		}
	}
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
