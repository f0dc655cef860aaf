package reports

import (
	"strings"
	"time"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// The ZooKeeper side of the mechanism: lock znodes, watch notifications
// and session expiries, read from the events of the simulated ensemble
// that the real go-zookeeper client talks to (sim/zk/ensemble,
// deriveEnsemble), the house's one ZooKeeper, which also gives each
// client's connection and each server's role.

// ensembleState follows the simulated ZooKeeper ensemble's trace
// (sim/zk/ensemble, where the unmodified go-zookeeper client talks to
// servers zk1…zkN over connections named "c1#2>zk3": client, dial number,
// server). A session outlives its connections, so znodes and expiries are
// tied to sessions, and sessions to the client that opened them.
type ensembleState struct {
	sessionOf map[string]string // connection → session id ("0x1…")
	clientOf  map[string]string // session id → client
	znodeSess map[int]string    // index in m.Znodes → session that owns it
	current   map[string]string // client → its connection in use
	state     map[string]*sessionSpan
	role      map[string]*serverSpan // server → its current role
	redialed  map[string]bool        // client → it redialed unanswered since its last CONNECT reply
	cur       int                    // the index of the event being read (res.Events)
}

func newEnsembleState() *ensembleState {
	return &ensembleState{sessionOf: map[string]string{}, clientOf: map[string]string{}, znodeSess: map[int]string{},
		current: map[string]string{}, state: map[string]*sessionSpan{}, role: map[string]*serverSpan{}, redialed: map[string]bool{}}
}

// connClient is the client of a connection name "c1#2>zk3".
func connClient(conn string) string {
	c, _, _ := strings.Cut(conn, "#")
	return c
}

// connServer is the server of a connection name "c1#2>zk3".
func connServer(conn string) string {
	_, srv, _ := strings.Cut(conn, ">")
	return srv
}

// setState starts a new connection state span of a client.
func (s *ensembleState) setState(m *mechanism, client, st string, at time.Duration) {
	if cur := s.state[client]; cur != nil {
		if cur.State == st {
			return
		}
		cur.To = at
		m.Sessions = append(m.Sessions, *cur)
	}
	s.state[client] = &sessionSpan{Client: client, State: st, From: at, Event: s.cur}
}

// setRole starts a new role span of a server.
func (s *ensembleState) setRole(m *mechanism, server, st string, at time.Duration) {
	if cur := s.role[server]; cur != nil {
		if cur.State == st {
			return
		}
		cur.To = at
		m.Servers = append(m.Servers, *cur)
	}
	s.role[server] = &serverSpan{Server: server, State: st, From: at, Event: s.cur}
}

// finish closes the open connection states and server roles at the end of
// the run, in client and host order.
func (s *ensembleState) finish(m *mechanism, clients []string, hosts []runner.Host, end time.Duration) {
	for _, c := range clients {
		if cur := s.state[c]; cur != nil {
			cur.To = end
			m.Sessions = append(m.Sessions, *cur)
		}
	}
	for _, h := range hosts {
		if cur := s.role[h.Name]; cur != nil {
			cur.To = end
			m.Servers = append(m.Servers, *cur)
		}
	}
}

// isEnsembleServer is a server of a backend that elects a leader among
// its servers (the simulated ZooKeeper ensemble): a backend's host has the
// backend's name as its role (runner.Run), and its descriptor says
// whether the election events draw roles (scenarios.BackendInfo.ServerRoles).
func isEnsembleServer(h runner.Host) bool {
	b, ok := scenarios.LookupBackend(h.Role)
	return ok && b.ServerRoles
}

// deriveEnsemble reads one event of an ensemble run and reports whether
// it was one. Frames a client received (a CREATE of an ephemeral node
// answered ok, a WATCH notification, a DELETE answered ok, a CONNECT
// answered with a session or refused), read from their typed facts (Op,
// Key, Reply, Session, Ephemeral), and the client's connection closing or
// resetting give the lock znodes as their owners saw them and the
// connection states; the server's session events give the expiries, which
// also delete the session's ephemeral nodes. A create whose reply never
// reached its client (held by a cut, dropped, lost) still made a node:
// it is drawn as untold, and a hold begun on it in another session (the
// GUID lookup of CURATOR-604) marks it adopted.
func deriveEnsemble(m *mechanism, s *ensembleState, e *event.Event, client bool, hosts []runner.Host) bool {
	switch e.Kind {
	case event.FrameHeld, event.MessageDropped, event.MessageLost:
		return s.untoldCreate(m, e)
	case event.HoldBegan:
		if client && e.LockValue != "" {
			s.adopt(m, e)
		}
		return false // the hold itself is read by deriveMechanism
	case event.LeaderAtStart, event.LeaderElected, event.ServerFollows, event.ServerStopped, event.ServerCrashed, event.ServerRestarted:
		s.serverRole(m, e, hosts)
	case event.FrameReceived:
		if client {
			s.clientFrame(m, e)
		}
	// The server closed the connection, or the client's connection
	// reset: the client is disconnected until it reaches a server again.
	case event.ConnClosedBy, event.ConnReset:
		if !client || e.Kind == event.ConnClosedBy && e.Reason != "server" {
			return false
		}
		s.disconnected(m, e)
	// The client's link to the server of its connection cut: its frames
	// wait, it hears no pings and then redials unanswered — SUSPENDED in
	// Curator's words — until the link heals or the server expires the
	// session (LOST: the client cannot know it yet).
	case event.LinkCut, event.LinkHealed:
		s.link(m, e, client)
	case event.ConnectNoAnswer:
		if client {
			s.redialed[e.Client] = true
		}
	case event.SessionCreated:
		s.sessionOf[e.Conn], s.clientOf[e.Session] = e.Session, e.Client
	case event.SessionExpired:
		s.expired(m, e)
	default:
		return false
	}
	return true
}

// untoldCreate reads a frame that did not reach its client; true when it
// was the ensemble's (a held frame, or a create's reply).
func (s *ensembleState) untoldCreate(m *mechanism, e *event.Event) bool {
	// A create's reply that did not reach the client: the server
	// made the node all the same.
	if e.Dir != "reply" || (e.Op != "CREATE" && e.Op != "CREATE2") || e.Reply != "ok" || !e.Ephemeral || e.Key == "" {
		return e.Kind == event.FrameHeld
	}
	conn := e.Conn
	if conn == "" {
		conn = s.current[e.Client]
	}
	if i, ok := s.openZnode(m, e.Key); ok && m.Znodes[i].Owner == e.Client {
		return true // already drawn
	}
	s.znodeSess[len(m.Znodes)] = s.sessionOf[conn]
	addZnode(m, e.Key, e.Client, e.At, s.cur)
	m.Znodes[len(m.Znodes)-1].Untold = true
	return true
}

// adopt reads a client's hold.began on a znode.
func (s *ensembleState) adopt(m *mechanism, e *event.Event) {
	// The hold's token is the node's path (its GUID unredacted): the
	// node it holds by. Found by a lookup, not told by a create's
	// reply: in the same session the fixed recipe found its own
	// node; in another, the node is adopted.
	for i := range m.Znodes {
		z := &m.Znodes[i]
		if z.End != "" || z.Owner != e.Client || !sameZnode(z.Path, e.LockValue) {
			continue
		}
		if sess := s.sessionOf[s.current[e.Client]]; s.znodeSess[i] != "" && sess != "" && sess != s.znodeSess[i] {
			z.Adopted, z.AdoptedAt, z.AdoptedIn, z.AdoptedEvent = true, e.At, sess, s.cur
		}
		break
	}
}

// Server roles: the first leader (the others follow), an elected
// leader, a follower that serves, a server that stops serving for want
// of a quorum, a crash, a restart (not serving until it joins a
// leader).
func (s *ensembleState) serverRole(m *mechanism, e *event.Event, hosts []runner.Host) {
	switch e.Kind {
	case event.LeaderAtStart:
		for _, h := range hosts {
			if isEnsembleServer(h) && h.Name != e.Node {
				s.setRole(m, h.Name, "follower", e.At)
			}
		}
		s.setRole(m, e.Node, "leader", e.At)
	case event.LeaderElected:
		s.setRole(m, e.Node, "leader", e.At)
	case event.ServerFollows:
		s.setRole(m, e.Node, "follower", e.At)
	case event.ServerStopped:
		// A crashed server also stops serving: it stays crashed.
		if cur := s.role[e.Node]; cur == nil || cur.State != "crashed" {
			s.setRole(m, e.Node, "not serving", e.At)
		}
	case event.ServerCrashed:
		s.setRole(m, e.Node, "crashed", e.At)
	case event.ServerRestarted:
		s.setRole(m, e.Node, "not serving", e.At)
	}
}

// clientFrame reads a frame a client received.
func (s *ensembleState) clientFrame(m *mechanism, e *event.Event) {
	// A reply as the client read it: its op, and what the frame
	// says as data (the ensemble's frame facts: path, result,
	// session, ephemeral).
	conn, who := e.Conn, e.Client
	switch {
	case e.Op == "CONNECT" && e.Session != "":
		s.sessionOf[conn], s.clientOf[e.Session], s.current[who] = e.Session, who, conn
		s.redialed[who] = false
		s.setState(m, who, "CONNECTED "+e.Node, e.At)
	case e.Op == "CONNECT" && e.Reply == "SESSIONEXPIRED":
		s.current[who] = conn
		s.setState(m, who, "EXPIRED", e.At)
	case (e.Op == "CREATE" || e.Op == "CREATE2") && e.Reply == "ok" && e.Ephemeral:
		if i, ok := s.openZnode(m, e.Key); ok && m.Znodes[i].Owner == who {
			m.Znodes[i].Untold = false // its held reply came through
			return
		}
		s.znodeSess[len(m.Znodes)] = s.sessionOf[conn]
		addZnode(m, e.Key, who, e.At, s.cur)
	case e.Op == "DELETE" && e.Reply == "ok":
		endZnode(m, e.Key, e.At, "deleted", s.cur)
	case e.Op == "WATCH":
		m.Notifies = append(m.Notifies, notify{Client: who, At: e.At, Event: e.Reply + " " + e.Key, Index: s.cur})
	}

}

// disconnected reads the server closing a client's connection, or the
// connection resetting.
func (s *ensembleState) disconnected(m *mechanism, e *event.Event) {
	who := e.Client
	if s.current[who] == e.Conn && s.state[who] != nil && strings.HasPrefix(s.state[who].State, "CONNECTED") {
		s.setState(m, who, "DISCONNECTED", e.At)
	}
	if s.current[who] == e.Conn && s.state[who] != nil && strings.HasPrefix(s.state[who].State, "LOST (") {
		s.setState(m, who, "LOST", e.At) // its server no longer answers either
	}

}

// link reads a cut or a heal of a client's link to a server.
func (s *ensembleState) link(m *mechanism, e *event.Event, client bool) {
	who, server := e.From, e.To
	if !client {
		who, server = e.To, e.From
	}
	st := s.state[who]
	if st == nil || connServer(s.current[who]) != server {
		return
	}
	switch {
	case e.Kind == event.LinkCut && strings.HasPrefix(st.State, "CONNECTED"):
		s.setState(m, who, "SUSPENDED", e.At)
	case e.Kind == event.LinkHealed && st.State == "SUSPENDED" && !s.redialed[who]:
		s.setState(m, who, "CONNECTED "+server, e.At)
	}
}

// expired reads the ensemble's expiry of a session.
func (s *ensembleState) expired(m *mechanism, e *event.Event) {
	who := s.clientOf[e.Session]
	if who == "" {
		return
	}
	m.Expiries = append(m.Expiries, sessionExpiry{Client: who, At: e.At, Event: s.cur})
	// The client's current session is gone, whether or not it still
	// talks to a server: one cut off from the quorum answers it until
	// it notices (the minority-partition lessons).
	if st := s.state[who]; st != nil && s.sessionOf[s.current[who]] == e.Session {
		lost := "LOST"
		if srv, ok := strings.CutPrefix(st.State, "CONNECTED "); ok {
			lost = "LOST (still connected to " + srv + ")"
		}
		s.setState(m, who, lost, e.At)
	}
	// Closing the session deletes its ephemeral nodes (the leader
	// commits closeSession; every server applies it).
	for i := range m.Znodes {
		if s.znodeSess[i] == e.Session && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = e.At, "session expired"
			m.Znodes[i].Events = append(m.Znodes[i].Events, s.cur)
		}
	}
}

// openZnode is the index of the znode at path that has not ended.
func (s *ensembleState) openZnode(m *mechanism, path string) (int, bool) {
	for i := len(m.Znodes) - 1; i >= 0; i-- {
		if m.Znodes[i].Path == path && m.Znodes[i].End == "" {
			return i, true
		}
	}
	return 0, false
}

// sameZnode says whether a drawn path (its GUID redacted, "_c_…-") and a
// hold's token (the path as the recipe has it) name the same node: the
// same parent and the same sequence number, which ZooKeeper never gives
// twice under one parent.
func sameZnode(drawn, token string) bool {
	di, ti := strings.LastIndexByte(drawn, '/'), strings.LastIndexByte(token, '/')
	if di < 0 || ti < 0 || drawn[:di] != token[:ti] || len(drawn) < 10 || len(token) < 10 {
		return false
	}
	return drawn[len(drawn)-10:] == token[len(token)-10:]
}

// addZnode starts the life of a lock znode; its short name is the sequence
// number.
func addZnode(m *mechanism, path, owner string, at time.Duration, ev int) {
	short := path[strings.LastIndex(path, "/")+1:]
	if j := strings.LastIndex(short, "-"); j >= 0 && j+1 < len(short) {
		short = short[j+1:]
	}
	if s := strings.TrimLeft(short, "0"); s != "" {
		short = s
	} else if short != "" {
		short = "0"
	}
	m.Znodes = append(m.Znodes, znodeSpan{Path: path, Short: short, Owner: owner, From: at, Events: []int{ev}})
}

// endZnode ends the open life of the znode at path, if there is one.
func endZnode(m *mechanism, path string, at time.Duration, why string, ev int) {
	for i := len(m.Znodes) - 1; i >= 0; i-- {
		if m.Znodes[i].Path == path && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = at, why
			m.Znodes[i].Events = append(m.Znodes[i].Events, ev)
			return
		}
	}
}
