package reports

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// The lock key on each Redis node, followed through the events: every
// command a node ran (its Args), with its reply, and every write a replica
// applied.

// keyState is the lock key on one node while the trace is read.
type keyState struct {
	span     keySpan
	live     bool
	deadline time.Duration // local time
	set      time.Duration // true time of the write that set the deadline
}

// keyTracker follows the lock key on every Redis node while the trace is
// read: who owns it, and when it expires on the node's own clock.
type keyTracker struct {
	m             *mechanism
	clocks        map[string]nodeClock
	key, fenceKey string
	owner         map[string]string // token → client that sent it
	state         map[string]*keyState
	cur           int // the index of the event being read (res.Events)
}

// close ends node n's current key span at true time at.
func (kt *keyTracker) close(n string, at time.Duration, why string) {
	s := kt.state[n]
	if !s.live {
		return
	}
	s.span.To, s.span.End, s.live = at, why, false
	if why != "expired" && why != "end of run" {
		// Ended by the event being read; an expiry is the node's clock
		// passing the deadline, found while reading a later event.
		s.span.Events = append(s.span.Events, kt.cur)
	}
	kt.m.Keys[n] = append(kt.m.Keys[n], s.span)
}

// resync replaces node n's key with master's at true time at: a full
// synchronization copies the master's dataset and drops the replica's own.
func (kt *keyTracker) resync(n, master string, at time.Duration) {
	kt.close(n, at, "full sync")
	ms := kt.state[master]
	if ms == nil || !ms.live {
		return
	}
	s := kt.state[n]
	s.live, s.set, s.deadline = true, ms.set, ms.deadline
	s.span = ms.span
	s.span.Node, s.span.From, s.span.Replica = n, at, true
	s.span.Events = []int{kt.cur} // the full sync
	s.span.Renewals = nil
	s.span.Renewed = 0
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
	s.span = keySpan{Node: n, Owner: who, LockValue: token, From: at, TTL: ttl, Replica: replica, Events: []int{kt.cur}}
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

// words is the command an event carries, from its Args (the command
// itself, never its summary for people), with a Lua script's body replaced
// by the name its algorithm registered ("<compare-and-delete>"), as
// sim.ScriptName gives it. nil when the event carries no command.
func words(e *event.Event) []string {
	if len(e.Args) == 0 {
		return nil
	}
	f := slices.Clone(e.Args)
	if len(f) >= 2 && strings.EqualFold(f[0], "eval") {
		f[1] = sim.ScriptName(f[1])
	}
	return f
}

// apply updates node n's key for one executed command (its words) and
// its reply.
func (kt *keyTracker) apply(n string, f []string, reply string, at time.Duration, replica bool) {
	m, key, fenceKey, state := kt.m, kt.key, kt.fenceKey, kt.state
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
		if s := state[n]; !s.live || s.span.LockValue != f[2] {
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
			m.Fences = append(m.Fences, fenceIssue{Node: n, At: at, FencingToken: v})
		}
	case verb == "eval" && len(f) >= 4 && f[3] == key:
		kt.applyScript(n, f, reply, at, replica)
	}
}

// applyScript updates node n's key for one of the lock scripts run on it
// (sim.ScriptName names them): a compare-and-delete release, a
// compare-and-pexpire renewal (or its refusal), a reentrant acquire or
// release.
func (kt *keyTracker) applyScript(n string, f []string, reply string, at time.Duration, replica bool) {
	m, state := kt.m, kt.state
	switch f[1] {
	case "<compare-and-delete>":
		if reply == ":1" {
			kt.close(n, at, "released")
		}
	case "<compare-and-pexpire>":
		if reply == ":0" && len(f) >= 5 && !replica {
			// The node refused: the key does not hold the renewer's
			// token (it expired, or another client took it).
			m.Refusals = append(m.Refusals, refusal{Node: n, Client: kt.owner[f[4]], LockValue: f[4], At: at, Event: kt.cur})
		}
		if reply == ":1" && len(f) >= 6 {
			if v, err := strconv.ParseInt(f[5], 10, 64); err == nil {
				kt.setTTL(n, at, time.Duration(v)*time.Millisecond)
				if s := state[n]; s.live {
					s.span.Renewed++
					s.span.Renewals = append(s.span.Renewals, at)
					s.span.RenewalEvents = append(s.span.RenewalEvents, kt.cur)
				}
			}
		}
	case "<reentrant-acquire>":
		if reply == "$-1" && len(f) >= 6 {
			ms, _ := strconv.ParseInt(f[4], 10, 64)
			s := state[n]
			if s.live && s.span.LockValue == f[5] {
				s.span.Count++
				kt.setTTL(n, at, time.Duration(ms)*time.Millisecond)
			} else {
				kt.open(n, f[5], at, time.Duration(ms)*time.Millisecond, replica)
				state[n].span.Count = 1
			}
			state[n].span.MaxCount = max(state[n].span.MaxCount, state[n].span.Count)
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
