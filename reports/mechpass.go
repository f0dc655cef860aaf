package reports

import (
	"sort"
	"strings"

	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// deriveMechanism reads res's events. It returns nil when the run kept
// none.
func deriveMechanism(res *runner.Result) *mechanism {
	if res == nil || len(res.Events) == 0 {
		return nil
	}
	p := newMechPass(res)
	for i := range res.Events {
		p.event(i, &res.Events[i])
	}
	return p.finish()
}

// mechPass is deriveMechanism's one pass over the events: the mechanism
// it fills and the trackers that follow the lock's structures (keys,
// permits, reader-writer holds, votes, the replication stream, the
// ZooKeeper ensemble).
type mechPass struct {
	res              *runner.Result
	m                *mechanism
	ensemble         bool
	isNode, isClient map[string]bool
	kt               *keyTracker
	pt               *permitTracker
	rt               *rwTracker
	vt               *voteTracker
	stream           *replStream
	ens              *ensembleState
}

func newMechPass(res *runner.Result) *mechPass {
	sc := res.Scenario
	m := &mechanism{Keys: map[string][]keySpan{}}
	m.Redlock = strings.HasPrefix(sc.Algorithm, "redlock")
	// gozk-*: the real go-zookeeper client against the simulated
	// ensemble, the house's one ZooKeeper.
	p := &mechPass{res: res, m: m, ensemble: strings.HasPrefix(sc.Algorithm, "gozk"), isNode: map[string]bool{}, isClient: map[string]bool{}}
	m.ZK = p.ensemble
	clocks := map[string]nodeClock{}
	for _, c := range sc.ClientNames() {
		p.isClient[c] = true
	}
	for _, h := range res.Hosts {
		clocks[h.Name] = newNodeClock(h, res.End)
		if h.IsRedisNode() {
			m.Nodes = append(m.Nodes, h.Name)
			p.isNode[h.Name] = true
		}
	}
	p.kt = &keyTracker{m: m, clocks: clocks, key: sc.Key, fenceKey: "fence:" + sc.Key, owner: map[string]string{}, state: map[string]*keyState{}}
	for _, n := range m.Nodes {
		p.kt.state[n] = &keyState{}
	}
	p.pt = newPermitTracker(sc.Key, p.kt.owner)
	p.rt = newRWTracker(sc.Key, p.kt.owner)
	if m.Redlock {
		p.vt = newVoteTracker(m, clocks, sc.Key, lockNodes(sc, p.isNode))
	}
	// Every node's writes, for the replication lag (replstream.go).
	p.stream = newReplStream()
	// ZooKeeper: the ensemble the real go-zookeeper client talks to.
	p.ens = newEnsembleState()
	return p
}

// event reads event i.
func (p *mechPass) event(i int, e *event.Event) {
	m, kt := p.m, p.kt
	actor := e.Actor
	base, _, _ := strings.Cut(actor, "/")
	for _, n := range m.Nodes {
		kt.expire(n, e.At)
	}
	p.ens.cur, kt.cur = i, i
	if p.ensemble && deriveEnsemble(m, p.ens, e, p.isClient[base], p.res.Hosts) {
		return
	}
	if p.isNode[actor] {
		p.rt.event(i, e)
	}
	if p.vt != nil {
		client := ""
		if p.isClient[base] {
			client = base
		}
		p.vt.event(i, e, client)
	}
	switch {
	case p.isClient[base] && e.Kind == event.CommandSent:
		owner := kt.owner
		f := words(e)
		if len(f) >= 3 && strings.EqualFold(f[0], "set") && f[1] == kt.key {
			owner[f[2]] = base
		}
		for _, w := range f {
			if looksLikeToken(w) {
				if _, ok := owner[w]; !ok {
					owner[w] = base
				}
			}
		}
	case p.isClient[base] && e.Kind == event.RenewalFailed:
		m.RenewFails = append(m.RenewFails, renewFail{Client: e.Client, Reason: e.Reason, At: e.At, Event: i})
	case p.isNode[actor]:
		p.nodeEvent(i, e)
	case (e.Kind == event.MessageLost || e.Kind == event.MessageDropped) && e.Op == "REPLICATE" && p.isNode[e.From] && p.isNode[e.To]:
		// An effect the network lost or a fault dropped on its way
		// to the replica.
		ev := replEvent{From: e.From, To: e.To, Arrived: e.At, Lost: true, Why: e.Reason, Summary: e.Command, Event: i}
		ev.Sent, ev.SentEvent, ev.HasSent = p.stream.match(e.From, e.To, e)
		m.Repl = append(m.Repl, ev)
	}
}

// nodeEvent reads event i of a Redis node: replication, failover, a
// crash and a restart, and the commands it ran.
func (p *mechPass) nodeEvent(i int, e *event.Event) {
	m, kt, actor := p.m, p.kt, e.Actor
	switch e.Kind {
	case event.ReplicationApplied:
		// The master that shipped the effect, as the replication
		// stream says: after a failover it is not the one the host
		// list started with.
		ev := replEvent{From: e.From, To: actor, Arrived: e.At, Summary: e.Command, Event: i}
		ev.Sent, ev.SentEvent, ev.HasSent = p.stream.match(ev.From, actor, e)
		m.Repl = append(m.Repl, ev)
		kt.apply(actor, words(e), "", e.At, true)
	case event.ReplicationLost:
		ev := replEvent{From: e.From, To: e.To, Arrived: e.At, Lost: true, Why: e.From + " was down before it could be delivered", Summary: e.Command, Event: i}
		ev.Sent, ev.SentEvent, ev.HasSent = p.stream.match(e.From, e.To, e)
		m.Repl = append(m.Repl, ev)
	case event.MessageLost, event.MessageDropped:
		if e.Op == "REPLICATE" && p.isNode[e.From] && p.isNode[e.To] {
			// An effect the network lost or a fault dropped on its
			// way to the replica.
			ev := replEvent{From: e.From, To: e.To, Arrived: e.At, Lost: true, Why: e.Reason, Summary: e.Command, Event: i}
			ev.Sent, ev.SentEvent, ev.HasSent = p.stream.match(e.From, e.To, e)
			m.Repl = append(m.Repl, ev)
		}
	case event.ReplicationFullSync:
		kt.resync(e.Node, e.From, e.At)
		p.stream.fullSync(e.From, e.Node)
	case event.Promoted:
		m.Promotions = append(m.Promotions, promotion{Node: e.Node, Old: e.From, At: e.At})
	case event.NodeCrashed:
		s := kt.state[actor]
		if s.live {
			saved := *s
			kt.close(actor, e.At, "crash")
			*s = saved
			s.live = false
			s.span.From = -1 // remembered, for a restart that keeps it
		}
	case event.NodeRestarted:
		s := kt.state[actor]
		if s.live {
			break // a full sync at the restart already gave it the master's key
		}
		if s.span.From == -1 && e.Keys != 0 {
			s.live, s.span.From, s.span.End = true, e.At, ""
		} else {
			*s = keyState{}
		}
	case event.CommandExecuted:
		m.noteStructure(actor, i, e, p.res.Scenario.Key)
		p.pt.executed(i, e)
		f, reply := words(e), e.Reply
		if changed(reply) {
			p.stream.wrote(actor, i, e)
		}
		kt.apply(actor, f, reply, e.At, false)
	}
}

// finish closes what is still open at the run's end.
func (p *mechPass) finish() *mechanism {
	m, kt, res, sc := p.m, p.kt, p.res, p.res.Scenario
	for _, n := range m.Nodes {
		kt.expire(n, res.End)
		kt.close(n, res.End, "end of run")
	}
	if p.vt != nil {
		p.vt.end(sc.ClientNames())
	}
	m.Permits = p.pt.finish(res.End)
	m.RW = p.rt.finish(res.End)
	if p.ensemble {
		p.ens.finish(m, sc.ClientNames(), res.Hosts, res.End)
	}
	for i := range m.Znodes {
		if m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = res.End, "end of run"
		}
	}
	sort.SliceStable(m.Attempts, func(i, j int) bool { return m.Attempts[i].From < m.Attempts[j].From })
	m.Voters = voters(m)
	return m
}
