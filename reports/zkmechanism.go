package reports

import (
	"strings"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// The ZooKeeper side of the mechanism: lock znodes, watch notifications
// and session expiries, read from the trace lines of the old single-server
// model (sim/zk, deriveZK) or of the simulated ensemble that the real
// go-zookeeper client talks to (sim/zk/ensemble, deriveEnsemble), which
// also gives each client's connection and each server's role.

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
}

func newEnsembleState() *ensembleState {
	return &ensembleState{sessionOf: map[string]string{}, clientOf: map[string]string{}, znodeSess: map[int]string{},
		current: map[string]string{}, state: map[string]*sessionSpan{}, role: map[string]*serverSpan{}}
}

// connClient is the client of a connection name "c1#2>zk3".
func connClient(conn string) string {
	c, _, _ := strings.Cut(conn, "#")
	return c
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
	s.state[client] = &sessionSpan{Client: client, State: st, From: at}
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
	s.role[server] = &serverSpan{Server: server, State: st, From: at}
}

// finish closes the open connection states and server roles at the end of
// the run, in client and host order.
func (s *ensembleState) finish(m *mechanism, clients []string, hosts []scenarios.Host, end time.Duration) {
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

// isEnsembleServer is a host of the simulated ensemble.
func isEnsembleServer(h scenarios.Host) bool { return strings.HasPrefix(h.Role, "zookeeper-ensemble") }

// deriveEnsemble reads one line of an ensemble run and reports whether it
// was one. Client lines ("recv c1#1>zk1 CREATE … → ok PATH (ephemeral)",
// "recv … WATCH NodeDeleted PATH", "recv … DELETE PATH → ok", "recv …
// CONNECT → session 0x…", "… closed by the server", "connection … reset")
// give the lock znodes as their owners saw them and the connection states;
// server lines ("session 0x… created for CONN", "session 0x… expired") give
// the expiries, which also delete the session's ephemeral nodes.
func deriveEnsemble(m *mechanism, s *ensembleState, e *event.Event, client bool, hosts []scenarios.Host) bool {
	switch e.Kind {
	// Server roles: the first leader (the others follow), an elected
	// leader, a follower that serves, a server that stops serving for want
	// of a quorum, a crash, a restart (not serving until it joins a
	// leader).
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

	case event.FrameReceived:
		if !client {
			return true
		}
		// A reply as the client read it; the message is ZooKeeper's
		// (opcode, path, result), summarized by the ensemble.
		conn, who, msg := e.Conn, e.Client, e.Command
		switch {
		case strings.HasPrefix(msg, "CONNECT → session "):
			id := strings.TrimPrefix(msg, "CONNECT → session ")
			s.sessionOf[conn], s.clientOf[id], s.current[who] = id, who, conn
			s.setState(m, who, "CONNECTED "+e.Node, e.At)
		case strings.HasPrefix(msg, "CONNECT refused"):
			s.current[who] = conn
			s.setState(m, who, "EXPIRED", e.At)
		case strings.HasPrefix(msg, "CREATE ") && strings.HasSuffix(msg, " (ephemeral)"):
			_, created, ok := strings.Cut(msg, " → ok ")
			if !ok {
				return true
			}
			path := strings.TrimSuffix(created, " (ephemeral)")
			s.znodeSess[len(m.Znodes)] = s.sessionOf[conn]
			addZnode(m, path, who, e.At)
		case strings.HasPrefix(msg, "DELETE ") && strings.HasSuffix(msg, " → ok"):
			endZnode(m, strings.Fields(msg)[1], e.At, "deleted")
		case strings.HasPrefix(msg, "WATCH "):
			m.Notifies = append(m.Notifies, notify{Client: who, At: e.At, Event: strings.TrimPrefix(msg, "WATCH ")})
		}

	// The server closed the connection, or the client's connection
	// reset: the client is disconnected until it reaches a server again.
	case event.ConnClosedBy, event.ConnReset:
		if !client || e.Kind == event.ConnClosedBy && e.Reason != "server" {
			return false
		}
		who := e.Client
		if s.current[who] == e.Conn && s.state[who] != nil && strings.HasPrefix(s.state[who].State, "CONNECTED") {
			s.setState(m, who, "DISCONNECTED", e.At)
		}

	case event.SessionCreated:
		s.sessionOf[e.Conn], s.clientOf[e.Session] = e.Session, e.Client
	case event.SessionExpired:
		who := s.clientOf[e.Session]
		if who == "" {
			return true
		}
		m.Expiries = append(m.Expiries, sessionExpiry{Client: who, At: e.At})
		// Closing the session deletes its ephemeral nodes (the leader
		// commits closeSession; every server applies it).
		for i := range m.Znodes {
			if s.znodeSess[i] == e.Session && m.Znodes[i].End == "" {
				m.Znodes[i].To, m.Znodes[i].End = e.At, "session expired"
			}
		}
	default:
		return false
	}
	return true
}

// addZnode starts the life of a lock znode; its short name is the sequence
// number.
func addZnode(m *mechanism, path, owner string, at time.Duration) {
	short := path[strings.LastIndex(path, "/")+1:]
	if j := strings.LastIndex(short, "-"); j >= 0 && j+1 < len(short) {
		short = short[j+1:]
	}
	if s := strings.TrimLeft(short, "0"); s != "" {
		short = s
	} else if short != "" {
		short = "0"
	}
	m.Znodes = append(m.Znodes, znodeSpan{Path: path, Short: short, Owner: owner, From: at})
}

// endZnode ends the open life of the znode at path, if there is one.
func endZnode(m *mechanism, path string, at time.Duration, why string) {
	for i := len(m.Znodes) - 1; i >= 0; i-- {
		if m.Znodes[i].Path == path && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = at, why
			return
		}
	}
}
