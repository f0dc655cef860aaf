package reports

import (
	"strings"
	"time"

	"github.com/locklab/locklab/runner"
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
	Node      string
	Owner     string // client name, or the lock value when no client sent it
	LockValue string
	From, To  time.Duration // true time
	// End says why the span ends: "released", "expired", "crash",
	// "overwritten", "full sync" (a replica took its master's dataset)
	// or "end of run".
	End string
	// TTL is the time to live the last write gave the key (on the node's
	// clock); Nominal is when the key would have expired had the node's
	// clock followed true time. A jump or a fast clock makes To < Nominal:
	// the bar snaps short.
	TTL     time.Duration
	Nominal time.Duration
	Count   int // reentrant hold count at the span's end (0 when not a hash lock)
	// MaxCount is the highest hold count the span reached: a reentrant
	// lock taken twice shows 2 even when it ends at 1.
	MaxCount int
	Renewed  int // renewals (compare-and-pexpire) during the span
	// Renewals are the true times of those renewals, each drawn;
	// RenewalEvents the node's executions of them (indexes in res.Events).
	Renewals      []time.Duration
	RenewalEvents []int
	Replica       bool // the key arrived by replication
	// Events: the write that set it and the event that ended it (not an
	// expiry, which the node's clock decides), indexes in res.Events.
	Events []int
}

// fenceIssue is an INCR of the fencing counter on a node.
type fenceIssue struct {
	Node         string
	At           time.Duration
	FencingToken int64
	Client       string
}

// vote is one node's answer to a Redlock acquire attempt.
type vote struct {
	Node string
	Got  string // voteYes, voteNo, voteUnheard, voteNoAnswer, voteNotAsked (votes.go)
}

// voteAttempt is one Redlock acquire attempt: a SET to every node.
type voteAttempt struct {
	Client    string
	LockValue string
	From, To  time.Duration // the first SET sent, the client's decision
	// Votes has one answer per configured lock node, in host order.
	Votes    []vote
	Quorum   int // of the configured lock nodes: len(Votes)/2+1
	Held     bool
	HoldAt   time.Duration
	Validity time.Duration // true time the client's validity ends (Held only)
	Reason   string        // a failed attempt: failQuorum, failTimeout or failValidity
	Events   []int         // the events it is drawn from (indexes in res.Events)
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
	Why      string // a lost effect: why ("partition", "A is down", a fault's reason)
	Summary  string
	HasSent  bool // the master's command was found (lag is known)
	// SentEvent and Event: the master's command and the replica's
	// applying (or the effect's loss), indexes in res.Events.
	SentEvent, Event int
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
	Event    int // the event that began it (res.Events)
}

// sessionExpiry is the server expiring a client's session.
type sessionExpiry struct {
	Client string
	At     time.Duration
	Event  int // its zk.session.expired (index in res.Events)
}

// znodeSpan is the life of one lock znode.
type znodeSpan struct {
	Path     string
	Short    string // the sequence number, or the last path element
	Owner    string
	From, To time.Duration
	End      string // "deleted", "session expired", "end of run"
	// Untold: the create's reply never reached Owner (held by a cut,
	// dropped, lost); the server made the node all the same.
	Untold bool
	// Adopted: Owner began a hold on this node at AdoptedAt in another
	// session, AdoptedIn, than the one that made it (CURATOR-604).
	Adopted   bool
	AdoptedAt time.Duration
	AdoptedIn string
	// Events: the create's reply (as the client read it, or as a fault
	// held or ate it), then the delete's reply or the session's expiry;
	// AdoptedEvent is the hold.began that adopted it (indexes in
	// res.Events).
	Events       []int
	AdoptedEvent int
}

// refusal is a renewal (compare-and-pexpire) a node refused because the
// key did not hold the renewer's lock value.
type refusal struct {
	Node, Client, LockValue string
	At                      time.Duration
	Event                   int // the node's command.executed (index in res.Events)
}

// renewFail is a background renewal of a client's lease that failed (a
// watchdog cut off from its node).
type renewFail struct {
	Client, Reason string
	At             time.Duration
	Event          int // the hold.renewal.failed (index in res.Events)
}

// notify is one watch notification the server sent.
type notify struct {
	Client string
	At     time.Duration
	Event  string
	Index  int // the frame the client received (index in res.Events)
}

// serverSpan is one role of a ZooKeeper ensemble server: "leader",
// "follower", "not serving" (no quorum in reach) or "crashed".
type serverSpan struct {
	Server   string
	State    string
	From, To time.Duration
	Event    int // the event that began it (index in res.Events)
}

// mechanism is everything derived from one run.
type mechanism struct {
	Nodes []string // Redis nodes, in host order
	// Voters are the Redlock nodes: those a client asked for the lock
	// (sent the SET of its token to), in host order. A fencing token
	// store is a Redis node but casts no vote, so the quorum counts
	// Voters, never Nodes.
	Voters     []string
	Keys       map[string][]keySpan
	Refusals   []refusal   // renewals a node refused
	RenewFails []renewFail // background renewals that failed, per client
	Fences     []fenceIssue
	Attempts   []voteAttempt
	Repl       []replEvent
	Promotions []promotion
	Sessions   []sessionSpan
	Expiries   []sessionExpiry
	Znodes     []znodeSpan
	Notifies   []notify
	Servers    []serverSpan // ensemble servers' roles, in the order they end
	// Structures: per Redis node, the commands it ran on the lock's data
	// other than its plain string key (a semaphore's sorted set of
	// permits, a reader-writer lock's hash): lockStructures.
	Structures map[string]*lockData
	// Permits are the entries of a semaphore's sorted set (permits.go).
	Permits []permitSpan
	// RW are the holds in a reader-writer lock's hash (rwlane.go).
	RW      []rwSpan
	Redlock bool
	ZK      bool
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

func newNodeClock(h runner.Host, end time.Duration) nodeClock {
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

// voters lists the nodes some Redlock attempt asked, in host order.
func voters(m *mechanism) []string {
	asked := map[string]bool{}
	for _, a := range m.Attempts {
		for _, v := range a.Votes {
			if v.Got != voteNotAsked {
				asked[v.Node] = true
			}
		}
	}
	var out []string
	for _, n := range m.Nodes {
		if asked[n] {
			out = append(out, n)
		}
	}
	return out
}
