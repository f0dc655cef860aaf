package etcdnode

// One etcd member: the real raft state machine (go.etcd.io/raft/v3's
// RawNode) driven by the world's kernel. Nothing here runs on a goroutine
// or a timer of its own: a tick is a world event every heartbeat interval
// on the member's own clock, a raft message is a world message (so
// partitions, drops and delays act on it), and each of them is followed by
// the Ready loop — persist, send, apply, Advance — at that same instant.
// The log lives in a raft.MemoryStorage that survives a crash when the
// member restarts "with its log" and is thrown away when it restarts
// empty.

import (
	"fmt"
	"io"
	"log"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// Member is one etcd server.
type Member struct {
	c    *Cluster
	ID   uint64
	Name string
	Host *sim.Host

	storage *raft.MemoryStorage
	node    *raft.RawNode
	kv      *store
	lessor  *lessor
	down    bool
	gen     int // incarnation: events of an earlier one do nothing
	lead    uint64
	state   raft.StateType
	ticks   int
	held    []func() // raft messages that reached the member while its host was paused

	pending map[uint64]*proposal
	nextReq uint64
	streams []*stream // watch and keep-alive streams served here
}

// proposal is a request this member put in the log and answers when it
// applies it (or when it gives up).
type proposal struct {
	done  func(resp any, err error)
	timer *sim.Event
}

var quietRaft = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// boot starts the member's raft node: on a new (or emptied) log it
// bootstraps the cluster's voters, as `etcd --initial-cluster-state new`
// does; on a kept log it starts from the log, applying every committed
// entry again from an empty key space (what etcd's backend would hold
// after replay).
func (m *Member) boot(keepLog bool) {
	fresh := !keepLog || m.storage == nil
	if fresh {
		m.storage = raft.NewMemoryStorage()
	}
	cfg := &raft.Config{
		ID:              m.ID,
		ElectionTick:    m.c.cfg.ElectionTicks,
		HeartbeatTick:   1,
		Storage:         m.storage,
		MaxSizePerMsg:   1 << 20,
		MaxInflightMsgs: 256,
		// etcd runs raft with CheckQuorum and PreVote on: a leader that
		// cannot hear a quorum steps down after an election timeout, and a
		// rejoining member cannot disrupt a working leader.
		CheckQuorum: true,
		PreVote:     true,
		Logger:      quietRaft,
	}
	node, err := raft.NewRawNode(cfg)
	if err != nil {
		panic(fmt.Sprintf("etcdnode: %s: %v", m.Name, err))
	}
	if fresh {
		peers := make([]raft.Peer, len(m.c.members))
		for i, o := range m.c.members {
			peers[i] = raft.Peer{ID: o.ID}
		}
		if err := node.Bootstrap(peers); err != nil {
			panic(fmt.Sprintf("etcdnode: %s: bootstrap: %v", m.Name, err))
		}
	}
	m.node = node
	m.kv = newStore()
	m.lessor = newLessor()
	m.lead, m.state, m.ticks = 0, raft.StateFollower, 0
	m.pending = map[uint64]*proposal{}
	m.down = false
	m.gen++
	m.scheduleTick()
	m.process()
}

// clock is the member's monotonic clock now (see lessor.go).
func (m *Member) clock() time.Duration {
	return m.Host.Clock.Oscillator().Local(m.c.w.Now())
}

func (m *Member) scheduleTick() {
	gen := m.gen
	w := m.c.w
	d := m.Host.Clock.TrueDuration(w.Now(), m.c.cfg.TickInterval)
	w.AtKey(w.Later(d), fmt.Sprintf("etcd tick %s", m.Name), func() {
		if m.gen != gen || m.down {
			return
		}
		m.scheduleTick()
		if m.Host.Paused() {
			return // a stopped process counts no ticks
		}
		m.guard(func() {
			m.node.Tick()
			m.ticks++
			if m.ticks%m.c.cfg.ExpiryCheckTicks == 0 {
				m.revokeExpired()
			}
			m.process()
		})
	})
}

// process is the Ready loop: persist what raft asks, send its messages,
// follow its role, apply what it committed, then Advance.
func (m *Member) process() {
	for !m.down && m.node.HasReady() {
		rd := m.node.Ready()
		if !raft.IsEmptyHardState(rd.HardState) {
			if err := m.storage.SetHardState(rd.HardState); err != nil {
				panic(err)
			}
		}
		if err := m.storage.Append(rd.Entries); err != nil {
			panic(err)
		}
		m.send(rd.Messages)
		if rd.SoftState != nil {
			m.role(rd.SoftState)
		}
		for i := range rd.CommittedEntries {
			m.applyEntry(rd.CommittedEntries[i])
		}
		m.node.Advance(rd)
	}
}

// role follows a change of leader or of this member's raft state. Losing
// leadership demotes the lessor at once (etcd's updateLeadership); gaining
// it promotes the lessor only when the leader applies the empty entry of
// its term (applyEntryNormal), see applyEntry.
func (m *Member) role(ss *raft.SoftState) {
	was := m.state
	m.lead, m.state = ss.Lead, ss.RaftState
	if was == raft.StateLeader && ss.RaftState != raft.StateLeader {
		m.lessor.demote()
	}
	if ss.RaftState == raft.StateLeader && was != raft.StateLeader {
		m.c.w.Record(m.Name, event.Event{Kind: event.EtcdLeader, Node: m.Name, Epoch: int64(m.term()), Total: len(m.c.members)})
	}
}

// term is the member's current raft term.
func (m *Member) term() uint64 { return m.node.BasicStatus().HardState.GetTerm() }

func (m *Member) isLeader() bool { return !m.down && m.state == raft.StateLeader }

// send puts raft's messages on the world's network, each a message from
// this member to another, named by its type.
func (m *Member) send(msgs []*raftpb.Message) {
	for _, msg := range msgs {
		to := m.c.byID[msg.GetTo()]
		if to == nil {
			continue
		}
		wm := &sim.Message{From: m.Name, To: to.Name, Client: m.Name, Dir: sim.Request, Op: "raft." + msg.GetType().String(),
			Summary: fmt.Sprintf("%s term %d index %d", msg.GetType(), msg.GetTerm(), msg.GetIndex())}
		m.c.w.Net.Send(wm, func() { to.receive(msg) })
	}
}

// receive steps a raft message into the member (kernel held).
func (m *Member) receive(msg *raftpb.Message) {
	if m.down {
		return
	}
	if m.Host.Paused() {
		m.held = append(m.held, func() { m.receive(msg) })
		return
	}
	m.guard(func() {
		_ = m.node.Step(msg)
		m.process()
	})
}

// guard runs fn, which steps the raft node; raft panics when its log
// contradicts what the leader knows of it (a member restarted without its
// log: "tocommit(22) is out of range [lastIndex(3)]. Was the raft log
// corrupted, truncated, or lost?"), and etcd's process dies with it. So
// does this member: it crashes, with raft's words as the reason.
func (m *Member) guard(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			m.crashBecause(fmt.Sprint(r))
		}
	}()
	fn()
}

// resumed delivers what arrived during a pause.
func (m *Member) resumed() {
	held := m.held
	m.held = nil
	for _, f := range held {
		f()
	}
}

// propose puts a request in the log; done runs when this member applies
// it, or with etcd's "request timed out" after the request timeout, or at
// once with "no leader" when raft drops the proposal (no leader known).
func (m *Member) propose(data []byte, id uint64, done func(resp any, err error)) {
	if err := m.node.Propose(data); err != nil {
		done(nil, errNoLeader)
		return
	}
	p := &proposal{done: done}
	gen := m.gen
	p.timer = m.c.w.AtKey(m.c.w.Later(m.c.cfg.RequestTimeout), fmt.Sprintf("etcd timeout %s %016x", m.Name, id), func() {
		if m.gen != gen || m.pending[id] != p {
			return
		}
		delete(m.pending, id)
		p.done(nil, errTimeout)
	})
	m.pending[id] = p
	m.process()
}

// nextID is a request id unique in the cluster: the member's id in the
// top bits, its count below (etcd's idutil generator does the same with
// the member id and a time prefix).
func (m *Member) nextID() uint64 {
	m.nextReq++
	return m.ID<<48 | m.nextReq
}

// crash stops the member: its connections reset, its pending requests are
// never answered, the raft node is gone.
func (m *Member) crash() { m.crashBecause("") }

func (m *Member) crashBecause(why string) {
	if m.down {
		return
	}
	m.down = true
	m.gen++
	m.held = nil
	m.pending = map[uint64]*proposal{}
	m.streams = nil
	m.c.w.Net.SetDown(m.Name, true)
	m.c.w.Record(m.Name, event.Event{Kind: event.EtcdMemberCrashed, Node: m.Name, Reason: why})
	m.c.net.Crash(m.Name)
}

// restart brings a crashed member back, with its raft log or without.
func (m *Member) restart(keepLog bool) {
	if !m.down {
		return
	}
	m.c.w.Net.SetDown(m.Name, false)
	m.c.net.Restart(m.Name)
	persist := "empty"
	if keepLog {
		persist = "log"
	}
	n := 0
	if keepLog && m.storage != nil {
		last, _ := m.storage.LastIndex()
		n = int(last)
	}
	m.c.w.Record(m.Name, event.Event{Kind: event.EtcdMemberStarted, Node: m.Name, Persistence: persist, Count: n})
	m.boot(keepLog)
}
