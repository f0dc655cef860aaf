package reports

import (
	"strings"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// The ZooKeeper side of the mechanism: lock znodes, watch notifications
// and session expiries, read from the trace lines of the old single-server
// model (sim/zk, deriveZK) or of the simulated ensemble that the real
// go-zookeeper client talks to (sim/zk/ensemble, deriveEnsemble), which
// also gives each client's connection and each server's role.

// deriveZK reads one line of the ZooKeeper server.
func deriveZK(m *mechanism, e sim.TraceEntry, creates *[]struct{ client, prefix string }, idx map[string]int) {
	text := e.Text
	switch {
	case strings.HasPrefix(text, "CREATE ") && strings.Contains(text, "→ created "):
		i := strings.Index(text, "→ created ")
		path := strings.Fields(text[i+len("→ created "):])[0]
		who := ""
		for k := len(*creates) - 1; k >= 0; k-- {
			if strings.HasPrefix(path, (*creates)[k].prefix) {
				who = (*creates)[k].client
				*creates = append((*creates)[:k:k], (*creates)[k+1:]...)
				break
			}
		}
		if who == "" {
			return // a persistent parent, not a lock node
		}
		short := path[strings.LastIndex(path, "/")+1:]
		if j := strings.LastIndex(short, "-"); j >= 0 && j+1 < len(short) {
			short = short[j+1:]
		}
		if s := strings.TrimLeft(short, "0"); s != "" {
			short = s
		} else if short != "" {
			short = "0"
		}
		idx[path] = len(m.Znodes)
		m.Znodes = append(m.Znodes, znodeSpan{Path: path, Short: short, Owner: who, From: e.At})
	case strings.HasPrefix(text, "DELETE ") && strings.HasSuffix(text, "→ ok"):
		path := strings.Fields(text)[1]
		if i, ok := idx[path]; ok && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = e.At, "deleted"
		}
	case strings.HasPrefix(text, "delete ephemeral "):
		path := strings.Fields(text)[2]
		if i, ok := idx[path]; ok && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = e.At, "session expired"
		}
	case strings.HasPrefix(text, "notify "):
		f := strings.Fields(text)
		if len(f) >= 2 {
			ev := ""
			if i := strings.Index(text, "): "); i >= 0 {
				ev = text[i+3:]
			}
			m.Notifies = append(m.Notifies, notify{Client: f[1], At: e.At, Event: ev})
		}
	case strings.HasPrefix(text, "session ") && strings.Contains(text, " expired"):
		f := strings.Fields(text)
		if len(f) >= 4 && f[2] == "of" {
			m.Expiries = append(m.Expiries, sessionExpiry{Client: f[3], At: e.At})
		}
	}
}

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
func deriveEnsemble(m *mechanism, s *ensembleState, e sim.TraceEntry, client bool, hosts []scenarios.Host) bool {
	text := e.Text
	// Server roles: "leads from the start" (the others follow), "elected
	// leader", "follows zkN and serves", "stops serving", "crash",
	// "restart" (not serving until it joins a leader).
	if !client && strings.HasPrefix(e.Actor, "zk") {
		switch {
		case strings.HasPrefix(text, "leads from the start"):
			for _, h := range hosts {
				if isEnsembleServer(h) && h.Name != e.Actor {
					s.setRole(m, h.Name, "follower", e.At)
				}
			}
			s.setRole(m, e.Actor, "leader", e.At)
			return true
		case strings.HasPrefix(text, "elected leader"):
			s.setRole(m, e.Actor, "leader", e.At)
			return true
		case strings.HasPrefix(text, "follows "):
			s.setRole(m, e.Actor, "follower", e.At)
			return true
		case text == "stops serving":
			// A crashed server also "stops serving": it stays crashed.
			if cur := s.role[e.Actor]; cur == nil || cur.State != "crashed" {
				s.setRole(m, e.Actor, "not serving", e.At)
			}
			return true
		case text == "crash":
			s.setRole(m, e.Actor, "crashed", e.At)
			return true
		case strings.HasPrefix(text, "restart"):
			s.setRole(m, e.Actor, "not serving", e.At)
			return true
		}
	}
	if rest, ok := strings.CutPrefix(text, "recv "); ok && client {
		conn, msg, _ := strings.Cut(rest, " ")
		who := connClient(conn)
		switch {
		case strings.HasPrefix(msg, "CONNECT → session "):
			id := strings.TrimPrefix(msg, "CONNECT → session ")
			s.sessionOf[conn], s.clientOf[id], s.current[who] = id, who, conn
			_, server, _ := strings.Cut(conn, ">")
			s.setState(m, who, "CONNECTED "+server, e.At)
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
		return true
	}
	if client {
		// "c1#1>zk1 closed by the server", "connection c1#1>zk1 reset: why":
		// the client is disconnected until it reaches a server again.
		conn := ""
		if c, ok := strings.CutSuffix(text, " closed by the server"); ok {
			conn = c
		} else if c, ok := strings.CutPrefix(text, "connection "); ok && strings.Contains(c, " reset: ") {
			conn, _, _ = strings.Cut(c, " ")
		}
		if conn == "" {
			return false
		}
		who := connClient(conn)
		if s.current[who] == conn && s.state[who] != nil && strings.HasPrefix(s.state[who].State, "CONNECTED") {
			s.setState(m, who, "DISCONNECTED", e.At)
		}
		return true
	}
	if rest, ok := strings.CutPrefix(text, "session "); ok {
		id, tail, _ := strings.Cut(rest, " ")
		switch {
		case strings.HasPrefix(tail, "created for "):
			conn := strings.Fields(strings.TrimPrefix(tail, "created for "))[0]
			s.sessionOf[conn], s.clientOf[id] = id, connClient(conn)
		case strings.HasPrefix(tail, "expired"):
			who := s.clientOf[id]
			if who == "" {
				return true
			}
			m.Expiries = append(m.Expiries, sessionExpiry{Client: who, At: e.At})
			// Closing the session deletes its ephemeral nodes (the leader
			// commits closeSession; every server applies it).
			for i := range m.Znodes {
				if s.znodeSess[i] == id && m.Znodes[i].End == "" {
					m.Znodes[i].To, m.Znodes[i].End = e.At, "session expired"
				}
			}
		}
		return true
	}
	return false
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
