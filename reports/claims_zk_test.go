package reports

import (
	"fmt"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// zkClaims checks the ZooKeeper queue's and notifications' data-events
// against their labels, from the log alone: a znode's first event is the
// reply to its owner's ephemeral create (received, or held, dropped or
// lost on the way) at its start, of a node whose sequence number is the
// one drawn; its second is the owner's delete answered ok of that path, or
// the expiry of the session the create's reply named. An adoption names
// the owner's hold.began on the node then; a notification the WATCH frame
// its client received then. Every WATCH frame a client received is drawn,
// when any is. It returns the elements checked.
func zkClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	n := 0
	notified := map[int]bool{}
	for _, s := range allShapes(tl) {
		words, kv := labelFields(s.Label)
		if len(words) == 0 || words[0] != "znode" && words[0] != "adopted" && words[0] != "notify" && words[0] != "notifies" {
			continue
		}
		n++
		ids, err := parseIDs(s.Events)
		if err != nil {
			errf("%q: %v", s.Label, err)
			continue
		}
		switch words[0] {
		case "znode":
			errs = append(errs, znodeClaim(res, words, ids)...)
		case "adopted":
			if e := res.Events[ids[0]]; len(ids) != 1 || e.Kind != event.HoldBegan || e.Client != words[2] || checker.Sec(e.At) != words[3] {
				errf("%q: event %d is not %s's hold.began then", s.Label, ids[0], words[2])
			}
		default: // one notification, or a herd row's all
			for _, id := range ids {
				e := res.Events[id]
				if e.Kind != event.FrameReceived || e.Op != "WATCH" || e.Client != words[1] || e.Actor != e.Client {
					errf("%q: event %d is not a notification %s received", s.Label, id, words[1])
				}
				notified[id] = true
			}
			if at, ok := kv["n"]; ok && at != fmt.Sprint(len(ids)) {
				errf("%q counts %s notifications, names %d", s.Label, at, len(ids))
			}
			if len(words) > 2 && fmt.Sprint(res.Events[ids[0]].At.Nanoseconds()) != words[2] {
				errf("%q: its notification (event %d) came at %d", s.Label, ids[0], res.Events[ids[0]].At)
			}
		}
	}
	if len(notified) > 0 {
		for i, e := range res.Events {
			if e.Kind == event.FrameReceived && e.Op == "WATCH" && e.Actor == e.Client && !notified[i] {
				errf("%s's watch notification at %v (event %d) is not drawn", e.Client, e.At, i)
			}
		}
	}
	return n, errs
}

// znodeClaim checks "znode SEQ OWNER FROM END…" against its events.
func znodeClaim(res *runner.Result, words []string, ids []int) []string {
	label := strings.Join(words, " ")
	c := res.Events[ids[0]]
	createReply := (c.Op == "CREATE" || c.Op == "CREATE2") && c.Reply == "ok" && c.Ephemeral && c.Dir == "reply"
	seq := c.Key[strings.LastIndexAny(c.Key, "-/")+1:]
	if seq = strings.TrimLeft(seq, "0"); seq == "" {
		seq = "0"
	}
	if !createReply || c.Client != words[2] || checker.Sec(c.At) != words[3] || seq != words[1] {
		return []string{fmt.Sprintf("%q: event %d is not %s's create of node %s then", label, ids[0], words[2], words[1])}
	}
	end := strings.Join(words[4:], " ")
	switch {
	case end == "deleted" && len(ids) == 2:
		if d := res.Events[ids[1]]; d.Kind != event.FrameReceived || d.Op != "DELETE" || d.Reply != "ok" || d.Key != c.Key {
			return []string{fmt.Sprintf("%q: event %d is not the delete of %s", label, ids[1], c.Key)}
		}
	case end == "session expired" && len(ids) == 2:
		if d := res.Events[ids[1]]; d.Kind != event.SessionExpired || c.Session != "" && d.Session != c.Session {
			return []string{fmt.Sprintf("%q: event %d is not the expiry of session %s", label, ids[1], c.Session)}
		}
	case end == "end of run" && len(ids) == 1:
	default:
		return []string{fmt.Sprintf("%q: ends %q with events %v", label, end, ids)}
	}
	return nil
}

// roleClaims checks each ensemble server's drawn role against the event it
// names: a leader is the server the first leader or an election named, a
// follower one the first leader did not name or that follows, a server not
// serving one that stopped or restarted, a crashed one that crashed; the
// role begins at that event. Every election and crash is drawn, when any
// role is. It returns the roles checked.
func roleClaims(res *runner.Result, tl *timeline) (int, []string) {
	var errs []string
	named := map[int]bool{}
	for _, s := range allShapes(tl) {
		words, _ := labelFields(s.Label)
		if len(words) < 4 || words[0] != "role" {
			continue
		}
		server, state, from := words[1], strings.Join(words[2:len(words)-1], " "), words[len(words)-1]
		ids, err := parseIDs(s.Events)
		if err != nil || len(ids) != 1 {
			errs = append(errs, fmt.Sprintf("%q: events %q", s.Label, s.Events))
			continue
		}
		e := res.Events[ids[0]]
		named[ids[0]] = true
		var ok bool
		switch state {
		case "leader":
			ok = (e.Kind == event.LeaderAtStart || e.Kind == event.LeaderElected) && e.Node == server
		case "follower":
			ok = e.Kind == event.LeaderAtStart && e.Node != server || e.Kind == event.ServerFollows && e.Node == server
		case "not serving":
			ok = (e.Kind == event.ServerStopped || e.Kind == event.ServerRestarted) && e.Node == server
		case "crashed":
			ok = e.Kind == event.ServerCrashed && e.Node == server
		}
		if !ok || checker.Sec(e.At) != from {
			errs = append(errs, fmt.Sprintf("%q: event %d (%s of %s at %s) does not begin it", s.Label, ids[0], e.Kind, e.Node, checker.Sec(e.At)))
		}
	}
	if len(named) > 0 {
		for i, e := range res.Events {
			if (e.Kind == event.LeaderElected || e.Kind == event.ServerCrashed || e.Kind == event.LeaderAtStart) && !named[i] {
				errs = append(errs, fmt.Sprintf("%s of %s at %v (event %d) is not drawn", e.Kind, e.Node, e.At, i))
			}
		}
	}
	return len(named), errs
}
