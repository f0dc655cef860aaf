package reports

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// Redlock's votes, as the client counted them. An attempt is one token:
// the client sends SET key token NX to each lock node and decides by
// quorum (N/2+1 of the N configured lock nodes, algorithms/redlock.go) and
// by validity (what is left of the TTL after the time the attempt took).
// A node's vote counts only when its reply reached the client: a reply a
// fault dropped or that came after the client's timeout is a key the node
// set that the client never heard about (the lesson of
// redlock-lost-reply-release-all).

// Vote answers, as the client saw them.
const (
	voteYes      = "yes"       // the node set the key, the client heard +OK
	voteNo       = "no"        // the node refused (the key was busy)
	voteUnheard  = "unheard"   // the node set the key; its reply never reached the client
	voteNoAnswer = "no answer" // the request or its reply was lost, or the client timed out
	voteNotAsked = "not asked" // a configured lock node the client sent no SET to (no connection)
)

// Why an attempt failed.
const (
	failQuorum   = "quorum"   // fewer than a quorum said yes, and every asked node answered
	failTimeout  = "timeout"  // fewer than a quorum said yes while an asked node's answer never came (lost, too late)
	failValidity = "validity" // a quorum said yes, but the attempt took longer than the TTL allows
)

// lockNodes are the scenario's Redlock nodes: the independent masters, not
// replicas nor a fencing token store (the same rule as scenarios' reach,
// runner/excuses.go). The quorum counts these, asked or not.
func lockNodes(sc *scenarios.Scenario, isNode map[string]bool) []string {
	var out []string
	for _, n := range sc.Nodes {
		if n.Replica == "" && n.Role == "" && isNode[n.Name] {
			out = append(out, n.Name)
		}
	}
	return out
}

// voteState is one node's part in an attempt while it is open.
type voteState struct {
	node                      string
	asked, ran, granted, lost bool
}

// voteTracker builds m.Attempts from the events, one event at a time.
type voteTracker struct {
	m      *mechanism
	clocks map[string]nodeClock
	key    string
	nodes  []string
	lock   map[string]bool
	open   map[string]*openAttempt // client → its attempt
	token  map[string]string       // token → client, for the nodes' side
}

type openAttempt struct {
	a       voteAttempt
	votes   map[string]*voteState
	decided bool
	last    time.Duration // the last answer the attempt got
}

func newVoteTracker(m *mechanism, clocks map[string]nodeClock, key string, nodes []string) *voteTracker {
	vt := &voteTracker{m: m, clocks: clocks, key: key, nodes: nodes, lock: map[string]bool{}, open: map[string]*openAttempt{}, token: map[string]string{}}
	for _, n := range nodes {
		vt.lock[n] = true
	}
	return vt
}

// setToken reports whether args are SET key <token> … and returns the token.
func (vt *voteTracker) setToken(args []string) (string, bool) {
	if len(args) >= 3 && strings.EqualFold(args[0], "set") && args[1] == vt.key {
		return args[2], true
	}
	return "", false
}

// event reads event i (e) of the run; client is the client host e is
// from, or "" when it is not a client's.
func (vt *voteTracker) event(i int, e *event.Event, client string) {
	if client != "" {
		vt.clientEvent(i, e, client)
		return
	}
	var o *openAttempt
	switch e.Kind {
	case event.CommandExecuted:
		tok, ok := vt.setToken(e.Args)
		if !ok || !vt.lock[e.Node] {
			return
		}
		if o = vt.open[vt.token[tok]]; o == nil || o.a.LockValue != tok || o.votes[e.Node] == nil {
			return
		}
		v := o.votes[e.Node]
		v.ran, v.granted = true, e.Reply == "+OK"
	case event.MessageDropped, event.MessageLost:
		// A lost request leaves the vote unanswered; a lost reply hides
		// the node's answer from the client.
		node := e.To
		if e.Dir == "reply" {
			node = e.From
		}
		// The message's op says it is a SET: the one this attempt sent
		// that node (a client has one SET to a node per attempt).
		if o = vt.open[e.Client]; o == nil || o.votes[node] == nil || !strings.EqualFold(e.Op, "SET") {
			return
		}
		if e.Dir == "reply" {
			o.votes[node].lost = true
		}
	default:
		return
	}
	o.a.Events = append(o.a.Events, i)
	o.last = e.At
}

func (vt *voteTracker) clientEvent(i int, e *event.Event, c string) {
	o := vt.open[c]
	switch e.Kind {
	case event.CommandSent:
		if tok, ok := vt.setToken(e.Args); ok && vt.lock[e.Node] {
			if o == nil || o.a.LockValue != tok {
				vt.finish(c, -1, 0)
				o = &openAttempt{a: voteAttempt{Client: c, LockValue: tok, From: e.At}, votes: map[string]*voteState{}}
				vt.open[c], vt.token[tok] = o, c
			}
			if o.votes[e.Node] == nil {
				o.votes[e.Node] = &voteState{node: e.Node}
			}
			o.votes[e.Node].asked = true
			o.a.Events = append(o.a.Events, i)
			return
		}
		// Any other command on the lock's key (a release, the fencing
		// counter) is the client acting on its decision.
		if o != nil && !o.decided && mentions(e.Args, vt.key) {
			vt.decide(o, i, e.At)
		}
	case event.ReplyTimeout:
		if o != nil && !o.decided && o.votes[e.Node] != nil {
			o.votes[e.Node].lost = true
			o.a.Events = append(o.a.Events, i)
			o.last = e.At
		}
	case event.HoldBegan:
		if o != nil {
			o.a.Held = true
			o.a.HoldAt = e.At
			o.a.Validity = vt.clocks[c].trueAt(0, e.Validity)
			vt.finish(c, i, e.At)
		}
	case event.AcquireFailed, event.AcquireGaveUp:
		vt.finish(c, i, e.At)
	}
}

// mentions reports whether a command's arguments name key (a release's
// script names it as its first key; the fencing counter is fence:key).
func mentions(args []string, key string) bool {
	for _, a := range args[min(1, len(args)):] {
		if a == key || a == "fence:"+key {
			return true
		}
	}
	return false
}

// decide closes o's interval at event i: the client acts on its count.
func (vt *voteTracker) decide(o *openAttempt, i int, at time.Duration) {
	o.decided = true
	o.a.To = at
	o.a.Events = append(o.a.Events, i)
}

// finish ends c's attempt. A decision event i (>= 0) that comes before any
// other decision closes its interval; with none (a naive client that
// releases nothing and tries again) the attempt ends at its last answer.
func (vt *voteTracker) finish(c string, i int, at time.Duration) {
	o := vt.open[c]
	if o == nil {
		return
	}
	delete(vt.open, c)
	if !o.decided {
		if i >= 0 {
			vt.decide(o, i, at)
		} else {
			o.a.To = max(o.last, o.a.From)
		}
	} else if i >= 0 {
		o.a.Events = append(o.a.Events, i)
	}
	a := o.a
	for _, n := range vt.nodes {
		v := o.votes[n]
		switch {
		case v == nil || !v.asked:
			a.Votes = append(a.Votes, vote{Node: n, Got: voteNotAsked})
		case v.ran && v.granted && !v.lost:
			a.Votes = append(a.Votes, vote{Node: n, Got: voteYes})
		case v.ran && v.granted:
			a.Votes = append(a.Votes, vote{Node: n, Got: voteUnheard})
		case v.ran && !v.lost:
			a.Votes = append(a.Votes, vote{Node: n, Got: voteNo})
		default:
			a.Votes = append(a.Votes, vote{Node: n, Got: voteNoAnswer})
		}
	}
	a.Quorum = len(vt.nodes)/2 + 1
	if !a.Held {
		a.Reason = failReason(a)
	}
	vt.m.Attempts = append(vt.m.Attempts, a)
}

// failReason says why a failed attempt failed, from its votes.
func failReason(a voteAttempt) string {
	yes, unanswered := 0, 0
	for _, v := range a.Votes {
		switch v.Got {
		case voteYes:
			yes++
		case voteUnheard, voteNoAnswer:
			unanswered++
		}
	}
	switch {
	case yes >= a.Quorum:
		return failValidity
	case unanswered > 0:
		return failTimeout
	}
	return failQuorum
}

// end closes the attempts still open at the end of the run, in client
// order.
func (vt *voteTracker) end(clients []string) {
	for _, c := range clients {
		vt.finish(c, -1, 0)
	}
}

// eventIDs is the data-events attribute: the positions in the run's event
// log (0-based, the line of `--events` less one) of the events an element
// is drawn from.
func eventIDs(ids []int) string {
	var b strings.Builder
	for k, id := range ids {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
	}
	return b.String()
}

// attemptPhrase says what an attempt's count came to, for its label.
func attemptPhrase(a voteAttempt, ttl time.Duration) string {
	n := len(a.Votes)
	switch a.Reason {
	case failValidity:
		return fmt.Sprintf("%d/%d votes, but %s of the %s TTL elapsed: no validity left", a.Yes(), n, dur(a.To-a.From), dur(ttl))
	case failTimeout:
		return fmt.Sprintf("%d/%d votes, %d unanswered in time: quorum %d not reached", a.Yes(), n, a.missing(), a.Quorum)
	}
	return fmt.Sprintf("%d/%d votes, quorum %d not reached", a.Yes(), n, a.Quorum)
}

// missing counts the asked nodes whose answer the client never heard.
func (a voteAttempt) missing() int {
	k := 0
	for _, v := range a.Votes {
		if v.Got == voteUnheard || v.Got == voteNoAnswer {
			k++
		}
	}
	return k
}

// attemptLabel is the data-label of attempts drawn as one element: the
// claim TestDrawnClaimsAreEvents re-derives from the events.
func attemptLabel(as []voteAttempt) string {
	a, z := as[0], as[len(as)-1]
	outcome := a.Reason
	if a.Held {
		outcome = "held"
	}
	return fmt.Sprintf("attempts %s n=%d from=%d to=%d yes=%d of=%d quorum=%d outcome=%s",
		a.Client, len(as), a.From, z.To, a.Yes(), len(a.Votes), a.Quorum, outcome)
}
