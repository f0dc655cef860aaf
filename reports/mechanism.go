package reports

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
)

// The mechanism of a run is the per-server state that explains its verdict:
// who owns the lock key on each Redis node and until when on that node's
// own clock, the votes a Redlock client counted, the replication stream, the
// ZooKeeper sessions and the znode queue. It is derived from what a run
// already records — the event trace (each node logs "command → reply", each
// client "send …", the kernel "replicated …", "node crash", ZooKeeper "zk
// state …") and the hosts' clock descriptions — so drawing it needs no hook
// in the simulator. A trace line this file does not understand is skipped:
// the lanes then show less, never something false.

// keySpan is one stretch during which a node holds the lock key for one
// owner.
type keySpan struct {
	Node     string
	Owner    string // client name, or the token when no client sent it
	Token    string
	From, To time.Duration // true time
	// End says why the span ends: "released", "expired", "crash",
	// "overwritten" or "end of run".
	End string
	// TTL is the time to live the last write gave the key (on the node's
	// clock); Nominal is when the key would have expired had the node's
	// clock followed true time. A jump or a fast clock makes To < Nominal:
	// the bar snaps short.
	TTL     time.Duration
	Nominal time.Duration
	Count   int  // reentrant hold count (0 when not a hash lock)
	Renewed int  // renewals (compare-and-pexpire) during the span
	Replica bool // the key arrived by replication
}

// fenceIssue is an INCR of the fencing counter on a node.
type fenceIssue struct {
	Node   string
	At     time.Duration
	Token  int64
	Client string
}

// vote is one node's answer to a Redlock acquire attempt.
type vote struct {
	Node string
	Got  string // "yes", "no", "lost" (no reply)
}

// voteAttempt is one Redlock acquire attempt: a SET to every node.
type voteAttempt struct {
	Client   string
	Token    string
	From, To time.Duration
	Votes    []vote
	Held     bool
	Validity time.Duration // true time the client's validity ends (Held only)
}

// Yes counts the votes for the client.
func (a voteAttempt) Yes() int {
	n := 0
	for _, v := range a.Votes {
		if v.Got == "yes" {
			n++
		}
	}
	return n
}

// replEvent is one write sent down the replication stream.
type replEvent struct {
	From, To string // master, replica
	Sent     time.Duration
	Arrived  time.Duration // when it reached the replica (or would have)
	Lost     bool
	Summary  string
	HasSent  bool // the master's command was found (lag is known)
}

// promotion is a failover.
type promotion struct {
	Node, Old string
	At        time.Duration
}

// sessionSpan is one ZooKeeper connection state of a client.
type sessionSpan struct {
	Client   string
	State    string // CONNECTED, SUSPENDED, LOST, ...
	From, To time.Duration
}

// sessionExpiry is the server expiring a client's session.
type sessionExpiry struct {
	Client string
	At     time.Duration
}

// znodeSpan is the life of one lock znode.
type znodeSpan struct {
	Path     string
	Short    string // the sequence number, or the last path element
	Owner    string
	From, To time.Duration
	End      string // "deleted", "session expired", "end of run"
}

// notify is one watch notification the server sent.
type notify struct {
	Client string
	At     time.Duration
	Event  string
}

// mechanism is everything derived from one run.
type mechanism struct {
	Nodes      []string // Redis nodes, in host order
	Keys       map[string][]keySpan
	Fences     []fenceIssue
	Attempts   []voteAttempt
	Repl       []replEvent
	Promotions []promotion
	Sessions   []sessionSpan
	Expiries   []sessionExpiry
	Znodes     []znodeSpan
	Notifies   []notify
	Redlock    bool
	ZK         bool
}

// hasRedis reports whether any key, fence or replication was seen.
func (m *mechanism) hasRedis() bool {
	for _, n := range m.Nodes {
		if len(m.Keys[n]) > 0 {
			return true
		}
	}
	return len(m.Fences) > 0 || len(m.Repl) > 0
}

// NotifiesPerClient counts the watch notifications each client received.
func (m *mechanism) NotifiesPerClient() map[string]int {
	out := map[string]int{}
	for _, n := range m.Notifies {
		out[n.Client]++
	}
	return out
}

// nodeClock maps true time to a host's local time and back, from the host's
// clock description (the same one the timeline's clock rows draw).
type nodeClock struct {
	pts []offsetPoint
}

func newNodeClock(h scenarios.Host, end time.Duration) nodeClock {
	return nodeClock{pts: clockOffsets(h, end)}
}

// local is the host's clock reading at true time t (as a duration since
// the epoch); at a jump it is the value after the jump.
func (c nodeClock) local(t time.Duration) time.Duration {
	off := time.Duration(0)
	for i, p := range c.pts {
		if p.at > t {
			if i == 0 {
				break
			}
			q := c.pts[i-1]
			if p.at == q.at {
				break
			}
			f := float64(t-q.at) / float64(p.at-q.at)
			return t + q.off + time.Duration(f*float64(p.off-q.off))
		}
		off = p.off
	}
	return t + off
}

// trueAt is the first true time >= from at which the local clock reads at
// least deadline.
func (c nodeClock) trueAt(from, deadline time.Duration) time.Duration {
	if c.local(from) >= deadline {
		return from
	}
	for i := 0; i+1 < len(c.pts); i++ {
		a, b := c.pts[i], c.pts[i+1]
		if b.at < from {
			continue
		}
		if a.at == b.at { // a jump at a.at
			if b.at >= from && b.at+b.off >= deadline {
				return b.at
			}
			continue
		}
		start := max(a.at, from)
		la, lb := c.local(start), b.at+b.off
		if lb >= deadline {
			if lb == la {
				return start
			}
			f := float64(deadline-la) / float64(lb-la)
			return start + time.Duration(f*float64(b.at-start))
		}
	}
	// Past the last point: the clock keeps its last offset.
	last := c.pts[len(c.pts)-1]
	return max(from, deadline-last.off)
}

// keyState is the lock key on one node while the trace is read.
type keyState struct {
	span     keySpan
	live     bool
	deadline time.Duration // local time
	set      time.Duration // true time of the write that set the deadline
}

// offsetSuffix ends a replication line that carries an effect.
var offsetSuffix = regexp.MustCompile(` \(offset [0-9]+\)$`)

// deriveMechanism reads res's trace. It returns nil when the run kept no
// trace.
func deriveMechanism(res *scenarios.Result) *mechanism {
	if res == nil || len(res.Trace) == 0 {
		return nil
	}
	sc := res.Scenario
	m := &mechanism{Keys: map[string][]keySpan{}}
	m.Redlock = strings.HasPrefix(sc.Algorithm, "redlock")
	m.ZK = strings.HasPrefix(sc.Algorithm, "zk")
	clocks := map[string]nodeClock{}
	isNode := map[string]bool{}
	isClient := map[string]bool{}
	for _, c := range sc.ClientNames() {
		isClient[c] = true
	}
	for _, h := range res.Hosts {
		clocks[h.Name] = newNodeClock(h, res.End)
		if strings.HasPrefix(h.Role, "redis") {
			m.Nodes = append(m.Nodes, h.Name)
			isNode[h.Name] = true
		}
	}
	kt := &keyTracker{m: m, clocks: clocks, key: sc.Key, fenceKey: "fence:" + sc.Key, owner: map[string]string{}, state: map[string]*keyState{}}
	for _, n := range m.Nodes {
		kt.state[n] = &keyState{}
	}
	owner, state := kt.owner, kt.state

	// Redlock attempts in progress, per client.
	open := map[string]*voteAttempt{}
	finish := func(c string, at time.Duration) {
		if a := open[c]; a != nil {
			a.To = at
			m.Attempts = append(m.Attempts, *a)
			delete(open, c)
		}
	}
	// Pending master writes, for replication lag: summary → times.
	masterOf := map[string]string{}
	for _, h := range res.Hosts {
		if r, ok := strings.CutPrefix(h.Role, "redis replica of "); ok {
			masterOf[h.Name] = r
		}
	}
	sentAt := map[string][]time.Duration{}   // master+"|"+summary → times
	tokenWrite := map[string]time.Duration{} // master+"|"+token → last write
	// sentTime is when the master ran the write a replication line is
	// about: the same command, or (when the stream carries rewritten
	// effects) the last write of the same token.
	sentTime := func(master, summary string, arrived time.Duration) (time.Duration, bool) {
		k := master + "|" + summary
		if ts := sentAt[k]; len(ts) > 0 {
			sentAt[k] = ts[1:]
			return ts[0], true
		}
		for _, w := range strings.Fields(summary) {
			if t, ok := tokenWrite[master+"|"+w]; ok && looksLikeToken(w) && t <= arrived {
				return t, true
			}
		}
		return 0, false
	}
	// ZooKeeper.
	zkState := map[string]*sessionSpan{}
	var zkCreates []struct{ client, prefix string }
	znodeIdx := map[string]int{}

	for _, e := range res.Trace {
		actor, text := e.Actor, e.Text
		base, _, _ := strings.Cut(actor, "/")
		for _, n := range m.Nodes {
			kt.expire(n, e.At)
		}
		switch {
		case isClient[base] && strings.HasPrefix(text, "send "):
			cmd, to, _ := strings.Cut(strings.TrimPrefix(text, "send "), " → ")
			f := strings.Fields(cmd)
			if len(f) >= 3 && strings.EqualFold(f[0], "set") && f[1] == kt.key {
				owner[f[2]] = base
				if m.Redlock && isNode[to] {
					a := open[base]
					if a == nil || a.Token != f[2] {
						finish(base, e.At)
						a = &voteAttempt{Client: base, Token: f[2], From: e.At}
						open[base] = a
					}
					a.Votes = append(a.Votes, vote{Node: to, Got: "lost"})
				}
			}
			for _, w := range f {
				if looksLikeToken(w) {
					if _, ok := owner[w]; !ok {
						owner[w] = base
					}
				}
			}
			if len(f) >= 2 && f[0] == "CREATE" && strings.Contains(cmd, "ephemeral") {
				zkCreates = append(zkCreates, struct{ client, prefix string }{base, f[1]})
			}
		case isClient[base] && strings.HasPrefix(text, "holds "):
			if a := open[base]; a != nil {
				a.Held = true
				if i := strings.Index(text, "valid until "); i >= 0 {
					v := strings.Fields(text[i+len("valid until "):])
					if len(v) > 0 {
						if d, err := time.ParseDuration(v[0]); err == nil {
							a.Validity = clocks[base].trueAt(0, d)
						}
					}
				}
				finish(base, e.At)
			}
		case isClient[base] && strings.HasPrefix(text, "acquire failed"):
			finish(base, e.At)
		case isClient[base] && strings.HasPrefix(text, "zk state "):
			st := strings.TrimPrefix(text, "zk state ")
			if cur := zkState[base]; cur != nil {
				cur.To = e.At
				m.Sessions = append(m.Sessions, *cur)
			}
			zkState[base] = &sessionSpan{Client: base, State: st, From: e.At}
		case isNode[actor] && strings.HasPrefix(text, "replicated "):
			// "replicated CMD → REPLY", or "replicated EFFECT (offset N)"
			// when the stream carries effects (SET … PXAT, DEL).
			rest := strings.TrimPrefix(text, "replicated ")
			summary, reply, ok := strings.Cut(rest, " → ")
			if !ok {
				summary, reply = offsetSuffix.ReplaceAllString(rest, ""), ""
			}
			ev := replEvent{From: masterOf[actor], To: actor, Arrived: e.At, Summary: summary}
			ev.Sent, ev.HasSent = sentTime(ev.From, summary, e.At)
			m.Repl = append(m.Repl, ev)
			kt.apply(actor, summary, reply, e.At, true)
		case isNode[actor] && strings.HasPrefix(text, "replication of "):
			rest := strings.TrimPrefix(text, "replication of ")
			j := strings.LastIndex(rest, " to ")
			if j < 0 {
				break
			}
			summary := rest[:j]
			replica, _, _ := strings.Cut(rest[j+len(" to "):], " lost")
			ev := replEvent{From: actor, To: replica, Arrived: e.At, Lost: true, Summary: summary}
			ev.Sent, ev.HasSent = sentTime(actor, summary, e.At)
			m.Repl = append(m.Repl, ev)
		case isNode[actor] && strings.HasPrefix(text, "failover: "):
			old := ""
			if i := strings.Index(text, "in place of "); i >= 0 {
				old = strings.TrimSpace(text[i+len("in place of "):])
			}
			m.Promotions = append(m.Promotions, promotion{Node: actor, Old: old, At: e.At})
		case isNode[actor] && text == "node crash":
			s := state[actor]
			if s.live {
				saved := *s
				kt.close(actor, e.At, "crash")
				*s = saved
				s.live = false
				s.span.From = -1 // remembered, for a restart that keeps it
			}
		case isNode[actor] && strings.HasPrefix(text, "node restart"):
			s := state[actor]
			if s.span.From == -1 && !strings.Contains(text, ", 0 keys)") {
				s.live, s.span.From, s.span.End = true, e.At, ""
			} else {
				*s = keyState{}
			}
		case isNode[actor] && strings.Contains(text, " → "):
			if i := strings.LastIndex(text, " → "); i > 0 {
				cmd, reply := text[:i], text[i+len(" → "):]
				if strings.HasPrefix(cmd, "lost ") || strings.HasPrefix(cmd, "delayed ") || strings.HasPrefix(cmd, "dropped ") {
					break
				}
				for range replicasOf(masterOf, actor) {
					if changed(reply) {
						sentAt[actor+"|"+cmd] = append(sentAt[actor+"|"+cmd], e.At)
						for _, w := range strings.Fields(cmd) {
							if looksLikeToken(w) {
								tokenWrite[actor+"|"+w] = e.At
							}
						}
					}
				}
				kt.apply(actor, cmd, reply, e.At, false)
				if m.Redlock {
					f := strings.Fields(cmd)
					if len(f) >= 3 && strings.EqualFold(f[0], "set") && f[1] == kt.key {
						if a := open[owner[f[2]]]; a != nil && a.Token == f[2] {
							for j := range a.Votes {
								if a.Votes[j].Node == actor {
									a.Votes[j].Got = "no"
									if reply == "+OK" {
										a.Votes[j].Got = "yes"
									}
								}
							}
						}
					}
				}
			}
		case actor == "zk" || strings.HasPrefix(actor, "zk"):
			deriveZK(m, e, &zkCreates, znodeIdx)
		}
	}
	for _, n := range m.Nodes {
		kt.expire(n, res.End)
		kt.close(n, res.End, "end of run")
	}
	for _, c := range sortedOpen(open) {
		finish(c, res.End)
	}
	for _, c := range sc.ClientNames() {
		if cur := zkState[c]; cur != nil {
			cur.To = res.End
			m.Sessions = append(m.Sessions, *cur)
		}
	}
	for i := range m.Znodes {
		if m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = res.End, "end of run"
		}
	}
	sort.SliceStable(m.Attempts, func(i, j int) bool { return m.Attempts[i].From < m.Attempts[j].From })
	return m
}

func sortedOpen(open map[string]*voteAttempt) []string {
	var out []string
	for c := range open {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

func replicasOf(masterOf map[string]string, node string) []string {
	var out []string
	for r, mst := range masterOf {
		if mst == node {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}

// changed reports whether a reply says the command changed the dataset (the
// commands Redis propagates).
func changed(reply string) bool {
	return reply == "+OK" || (strings.HasPrefix(reply, ":") && reply != ":0")
}

// looksLikeToken is a 16-hex-digit lock token.
func looksLikeToken(s string) bool {
	if len(s) != 16 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// keyTracker follows the lock key on every Redis node while the trace is
// read: who owns it, and when it expires on the node's own clock.
type keyTracker struct {
	m             *mechanism
	clocks        map[string]nodeClock
	key, fenceKey string
	owner         map[string]string // token → client that sent it
	state         map[string]*keyState
}

// close ends node n's current key span at true time at.
func (kt *keyTracker) close(n string, at time.Duration, why string) {
	s := kt.state[n]
	if !s.live {
		return
	}
	s.span.To, s.span.End, s.live = at, why, false
	kt.m.Keys[n] = append(kt.m.Keys[n], s.span)
}

// expire closes a key whose deadline passed on its node's clock by t, at
// the true time the node's clock reached the deadline.
func (kt *keyTracker) expire(n string, t time.Duration) {
	s := kt.state[n]
	if !s.live || s.deadline <= 0 {
		return
	}
	c := kt.clocks[n]
	if c.local(t) >= s.deadline {
		kt.close(n, c.trueAt(s.set, s.deadline), "expired")
	}
}

// open starts a key span: token was written at true time at with a TTL
// counted on the node's clock (0: none).
func (kt *keyTracker) open(n, token string, at, ttl time.Duration, replica bool) {
	s := kt.state[n]
	if s.live {
		kt.close(n, at, "overwritten")
	}
	s.live, s.set, s.deadline = true, at, 0
	if ttl > 0 {
		s.deadline = kt.clocks[n].local(at) + ttl
	}
	who := kt.owner[token]
	if who == "" {
		who = token
	}
	s.span = keySpan{Node: n, Owner: who, Token: token, From: at, TTL: ttl, Replica: replica}
	if ttl > 0 {
		s.span.Nominal = at + ttl
	}
}

// setTTL gives the live key a new TTL from true time at (EXPIRE, PEXPIRE,
// a renewal).
func (kt *keyTracker) setTTL(n string, at, ttl time.Duration) {
	s := kt.state[n]
	if !s.live {
		return
	}
	s.set, s.deadline = at, kt.clocks[n].local(at)+ttl
	s.span.TTL, s.span.Nominal = ttl, at+ttl
}

// setDeadline gives the live key an absolute expiry on its node's clock
// (PXAT, PEXPIREAT), read at true time at.
func (kt *keyTracker) setDeadline(n string, at, deadline time.Duration) {
	s := kt.state[n]
	if !s.live {
		return
	}
	ttl := deadline - kt.clocks[n].local(at)
	s.set, s.deadline = at, deadline
	s.span.TTL, s.span.Nominal = ttl, at+ttl
}

// apply updates node n's key for one executed command and its reply.
func (kt *keyTracker) apply(n, cmd, reply string, at time.Duration, replica bool) {
	m, key, fenceKey, state := kt.m, kt.key, kt.fenceKey, kt.state
	f := strings.Fields(cmd)
	if len(f) < 2 {
		return
	}
	verb := strings.ToLower(f[0])
	switch {
	case verb == "set" && f[1] == key && len(f) >= 3:
		// A replicated effect has no reply: it ran because it changed
		// the master's data.
		if reply != "+OK" && !(replica && reply == "") {
			return
		}
		ttl, deadline, abs := ttlArgs(f[3:])
		kt.open(n, f[2], at, ttl, replica)
		if abs {
			kt.setDeadline(n, at, deadline)
		}
	case verb == "pexpireat" && f[1] == key && len(f) >= 3:
		if v, err := strconv.ParseInt(f[2], 10, 64); err == nil {
			kt.setDeadline(n, at, time.UnixMilli(v).Sub(sim.Epoch))
		}
	case verb == "hset" && f[1] == key && len(f) >= 4 && replica:
		if s := state[n]; !s.live || s.span.Token != f[2] {
			kt.open(n, f[2], at, 0, replica)
		}
	case verb == "setnx" && f[1] == key && len(f) >= 3:
		if reply == ":1" {
			kt.open(n, f[2], at, 0, replica)
		}
	case (verb == "expire" || verb == "pexpire") && f[1] == key && len(f) >= 3:
		if reply == ":1" {
			if v, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				unit := time.Second
				if verb == "pexpire" {
					unit = time.Millisecond
				}
				kt.setTTL(n, at, time.Duration(v)*unit)
			}
		}
	case verb == "del" && f[1] == key:
		if reply == ":1" || replica && reply == "" {
			kt.close(n, at, "released")
		}
	case verb == "incr" && f[1] == fenceKey:
		if v, err := strconv.ParseInt(strings.TrimPrefix(reply, ":"), 10, 64); err == nil && strings.HasPrefix(reply, ":") {
			m.Fences = append(m.Fences, fenceIssue{Node: n, At: at, Token: v})
		}
	case verb == "eval" && len(f) >= 4 && f[3] == key:
		script := f[1]
		switch script {
		case "<compare-and-delete>":
			if reply == ":1" {
				kt.close(n, at, "released")
			}
		case "<compare-and-pexpire>":
			if reply == ":1" && len(f) >= 6 {
				if v, err := strconv.ParseInt(f[5], 10, 64); err == nil {
					kt.setTTL(n, at, time.Duration(v)*time.Millisecond)
					if s := state[n]; s.live {
						s.span.Renewed++
					}
				}
			}
		case "<reentrant-acquire>":
			if reply == "$-1" && len(f) >= 6 {
				ms, _ := strconv.ParseInt(f[4], 10, 64)
				s := state[n]
				if s.live && s.span.Token == f[5] {
					s.span.Count++
					kt.setTTL(n, at, time.Duration(ms)*time.Millisecond)
				} else {
					kt.open(n, f[5], at, time.Duration(ms)*time.Millisecond, replica)
					state[n].span.Count = 1
				}
			}
		case "<reentrant-release>":
			// 1: the last hold, the key is deleted; 0: one hold fewer,
			// the TTL is renewed; nil: not the owner.
			if s := state[n]; s.live {
				switch reply {
				case ":1":
					kt.close(n, at, "released")
				case ":0":
					if s.span.Count > 0 {
						s.span.Count--
					}
					if len(f) >= 5 {
						ms, _ := strconv.ParseInt(f[4], 10, 64)
						kt.setTTL(n, at, time.Duration(ms)*time.Millisecond)
					}
				}
			}
		}
	}
}

// ttlArgs reads a SET's expiry: EX/PX as a TTL, or PXAT/EXAT (what a
// replication stream of effects carries) as an absolute reading of the
// node's clock (abs is then true).
func ttlArgs(args []string) (ttl, deadline time.Duration, abs bool) {
	for i := 0; i+1 < len(args); i++ {
		v, err := strconv.ParseInt(args[i+1], 10, 64)
		if err != nil {
			continue
		}
		switch strings.ToLower(args[i]) {
		case "ex":
			return time.Duration(v) * time.Second, 0, false
		case "px":
			return time.Duration(v) * time.Millisecond, 0, false
		case "pxat":
			return 0, time.UnixMilli(v).Sub(sim.Epoch), true
		case "exat":
			return 0, time.Unix(v, 0).Sub(sim.Epoch), true
		}
	}
	return 0, 0, false
}

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
