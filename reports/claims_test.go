package reports

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

// drawnClaimChecks re-derive, each for one kind of drawn element, every
// element's claim from the event log; the kind counts how many were checked.
var drawnClaimChecks = []struct {
	kind  string
	check func(*runner.Result, *timeline) (int, []string)
}{
	{"access", accessClaims}, // access markers and fence labels, with or without a mechanism
	{"witness", witnessClaims},
	{"zk", zkClaims},
	{"roles", roleClaims},
	{"renewals", renewalClaims},
	{"faults", faultClaims},
	{"liveness", livenessClaims},
}

// The claims the timeline draws, re-derived from the event log alone: each
// element's data-label states its claim and data-events the events it is
// drawn from; the functions here recompute the claim from those events and
// the rest of the log with their own rules (sharing no code with the
// drawing), and check the other way round that every event of the kind is
// drawn. Each contradiction of issue 34 — a 5-node Redlock counted as 3, a
// reply the client never heard counted as a vote, a validity back-off drawn
// as a lost quorum, attempt intervals shifted by one attempt — fails here.
func TestDrawnClaimsAreEvents(t *testing.T) {
	seen := map[string]int{}
	for _, r := range catalogueMechanisms(t) {
		// Access markers and the store's fence labels are drawn with or
		// without a mechanism (claims_access_test.go).
		tl := buildTimelineMech(r.res, r.m, "t-", 0, r.res.End, false)
		var errs []string
		for _, c := range drawnClaimChecks {
			n, cerrs := c.check(r.res, tl)
			seen[c.kind] += n
			errs = append(errs, cerrs...)
		}
		for _, err := range errs {
			t.Errorf("%s: %s", r.id, err)
		}
		if r.m == nil {
			continue
		}
		for _, s := range allShapes(tl) {
			if k, _, ok := strings.Cut(s.Label, " "); ok && k != "access" {
				seen[k]++
			}
			if strings.Contains(s.Text, " ✓") || strings.Contains(s.Text, " ✗") {
				seen["fence"]++ // a fence label, checked by accessClaims
			}
			// A reader-writer hold names its holder: "as a reader", "as a
			// writer" (never "writeer").
			if strings.Contains(s.Class, "hold") && strings.Contains(s.Title, " as a ") &&
				!strings.Contains(s.Title, " as a reader ") && !strings.Contains(s.Title, " as a writer ") {
				t.Errorf("%s: hold tooltip %q", r.id, s.Title)
			}
		}
		for _, err := range claimMismatches(r.res, tl) {
			t.Errorf("%s: %s", r.id, err)
		}
	}
	// Every kind of claim is drawn somewhere in the catalogue, so none of
	// the checks above passes for want of elements.
	for _, k := range []string{"attempts", "subtitle", "nokey", "lockdata", "backendhold", "poolmap", "permit", "repl", "repllost", "rwhold", "access", "fence", "witness", "zk", "roles", "renewals", "faults", "liveness", "faultlane", "faultstart", "faultrow", "paused", "wakes", "hung", "crash", "down", "restarts", "expiry", "unavailable", "waiting"} {
		if seen[k] == 0 {
			t.Errorf("no %s element drawn in the whole catalogue", k)
		}
	}
	t.Logf("claims checked: %v", seen)
}

func allShapes(tl *timeline) []shape {
	return slices.Concat(tl.Back, tl.Plot, tl.Over)
}

// labelFields splits "kind word k=v k=v" into its words and fields.
func labelFields(label string) ([]string, map[string]string) {
	var words []string
	kv := map[string]string{}
	for _, f := range strings.Fields(label) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		} else {
			words = append(words, f)
		}
	}
	return words, kv
}

func parseIDs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if a, b, ok := strings.Cut(f, "-"); ok {
			// A run of consecutive ids, first-last (eventRanges).
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || hi < lo {
				return nil, fmt.Errorf("data-events %q: bad range %q", s, f)
			}
			for n := lo; n <= hi; n++ {
				out = append(out, n)
			}
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("data-events %q: %v", s, err)
		}
		out = append(out, n)
	}
	return out, nil
}

func claimMismatches(res *runner.Result, tl *timeline) []string {
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	drawnSets := map[int]int{} // a client's SET of the lock (event id) → elements naming it
	var sessions []string
	backendGrants, permits, scripted := 0, 0, 0
	scriptNamed := map[int]bool{} // events of the permit-expiring semaphore's entries
	assigned := map[int]bool{}    // a pooler's assignments drawn
	for _, s := range allShapes(tl) {
		switch {
		case strings.HasPrefix(s.Label, "subtitle "):
			errs = append(errs, subtitleClaim(res, s)...)
			continue
		case strings.HasPrefix(s.Label, "nokey ") || strings.HasPrefix(s.Label, "lockdata "):
			errs = append(errs, lockDataClaim(res, s.Label)...)
			continue
		case strings.HasPrefix(s.Label, "poolmap "):
			ids, perrs := poolMapClaim(res, s.Label, s.Events)
			errs = append(errs, perrs...)
			for _, id := range ids {
				assigned[id] = true
			}
			continue
		case strings.HasPrefix(s.Label, "backendhold "):
			backendGrants += backendHoldClaim(res, s, &errs)
			continue
		case strings.HasPrefix(s.Label, "permit "):
			ids, _ := parseIDs(s.Events)
			if namesScript(res, ids) {
				for _, id := range ids {
					scriptNamed[id] = true
				}
				scripted++
				errs = append(errs, scriptPermitClaim(res, s.Label)...)
				continue
			}
			permits++
			errs = append(errs, permitClaim(res, s.Label)...)
			continue
		case strings.HasPrefix(s.Label, "repl ") || strings.HasPrefix(s.Label, "repllost "):
			errs = append(errs, replClaim(res, s)...)
			continue
		case strings.HasPrefix(s.Label, "rwhold "):
			errs = append(errs, rwClaim(res, s.Label)...)
			continue
		case strings.HasPrefix(s.Label, "session "):
			sessions = append(sessions, s.Label)
			// The event it names began the state then.
			if ids, err := parseIDs(s.Events); err != nil || len(ids) != 1 || fmt.Sprintf("%.3fs", res.Events[ids[0]].At.Seconds()) != s.Label[strings.LastIndex(s.Label, " ")+1:] {
				errf("%q: its event (%s) is not at its start", s.Label, s.Events)
			}
			continue
		case s.Class == "key-span" && s.Events != "":
			// A key bar's events are its own node's: the write, the end.
			node := strings.Fields(s.Label)[1]
			ids, err := parseIDs(s.Events)
			for _, id := range ids {
				if e := res.Events[id]; err != nil || e.Node != node && e.Actor != node {
					errf("key bar %q names event %d of %s", s.Label, id, e.Actor)
				}
			}
			continue
		case (s.Class == "hold" || strings.HasPrefix(s.Class, "hold ")) && s.Events != "":
			// A client's hold bar names the hold.began of that client.
			if ids, err := parseIDs(s.Events); err != nil || len(ids) != 1 || res.Events[ids[0]].Kind != event.HoldBegan || !strings.HasPrefix(s.Title, res.Events[ids[0]].Actor+" holds") {
				errf("hold bar %q: its event (%s) is not its client's hold.began", s.Title, s.Events)
			}
			continue
		case !strings.HasPrefix(s.Label, "attempts "):
			continue
		}
		ids, err := parseIDs(s.Events)
		if err != nil || len(ids) == 0 {
			errf("%q: no events named (%v)", s.Label, err)
			continue
		}
		for _, id := range ids {
			if e := res.Events[id]; e.Kind == event.CommandSent {
				drawnSets[id]++
			}
		}
		errs = append(errs, attemptClaim(res, s.Label, ids)...)
	}
	errs = append(errs, sessionClaims(res, sessions)...)
	// Every entry added to a semaphore's set is drawn, when the lane is.
	if permits > 0 {
		added := map[string]bool{}
		for _, e := range res.Events {
			if e.Kind == event.CommandExecuted && len(e.Args) >= 4 && strings.EqualFold(e.Args[0], "zadd") && e.Args[1] == res.Scenario.Key {
				added[e.Node+" "+e.Args[len(e.Args)-1]] = true
			}
		}
		if len(added) != permits {
			errf("%d entries added to the permit set, %d drawn", len(added), permits)
		}
	}
	// Every assignment of a backend by a pooler is drawn, when the
	// backends lane is.
	if backendGrants > 0 {
		for i, e := range res.Events {
			if e.Kind == event.DBPoolMapped && e.Reason == "assigned" && !assigned[i] {
				errf("the pooler's assignment of %s to %s at %v (event %d) is not drawn", e.Session, e.Conn, e.At, i)
			}
		}
	}
	if scripted > 0 {
		errs = append(errs, scriptPermitsDrawn(res, scriptNamed)...)
	}
	// Every grant to a backend is in a drawn hold, when the lane is drawn.
	if backendGrants > 0 {
		dials := map[string]bool{}
		for _, e := range res.Events {
			if e.Kind == event.DBConnOpened {
				dials[e.Client] = true
			}
		}
		n := 0
		for _, e := range res.Events {
			if e.Kind == event.DBLockGranted && !dials[e.Node] {
				n++
			}
		}
		if n != backendGrants {
			errf("%d locks granted to backends, %d drawn", n, backendGrants)
		}
	}
	// The other way round: every SET of the lock a client sent to a lock
	// node is in exactly one drawn attempt, when the votes lane is drawn.
	if len(drawnSets) > 0 {
		lock := claimLockNodes(res.Scenario)
		for i, e := range res.Events {
			if e.Kind == event.CommandSent && len(e.Args) >= 3 && strings.EqualFold(e.Args[0], "set") && e.Args[1] == res.Scenario.Key && lock[e.Node] {
				if drawnSets[i] != 1 {
					errf("%s's SET of %s to %s at %v (event %d) is in %d drawn attempts", e.Actor, e.Args[2], e.Node, e.At, i, drawnSets[i])
				}
			}
		}
	}
	return errs
}

// claimLockNodes are the configured Redlock nodes, by the scenario's own
// definition: masters that are no token store.
func claimLockNodes(sc *scenarios.Scenario) map[string]bool {
	out := map[string]bool{}
	for _, n := range sc.Nodes {
		if n.Replica == "" && n.Role == "" {
			out[n.Name] = true
		}
	}
	return out
}

// attemptClaim re-derives a drawn group of Redlock attempts.
func attemptClaim(res *runner.Result, label string, ids []int) []string {
	var errs []string
	errf := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%q: ", label)+fmt.Sprintf(format, args...))
	}
	words, kv := labelFields(label)
	if len(words) != 2 {
		return []string{fmt.Sprintf("%q: not an attempts label", label)}
	}
	client, key := words[1], res.Scenario.Key
	lock := claimLockNodes(res.Scenario)
	var tokens []string
	for _, id := range ids {
		e := res.Events[id]
		if e.Kind == event.CommandSent && e.Actor == client && len(e.Args) >= 3 && e.Args[1] == key && !slices.Contains(tokens, e.Args[2]) {
			tokens = append(tokens, e.Args[2])
		}
	}
	if want := kv["n"]; strconv.Itoa(len(tokens)) != want {
		errf("drawn as %s attempts, its events hold %d tokens", want, len(tokens))
		return errs
	}
	if want := strconv.Itoa(len(lock)); kv["of"] != want {
		errf("votes out of %s nodes; the scenario configures %s lock nodes", kv["of"], want)
	}
	if want := strconv.Itoa(len(lock)/2 + 1); kv["quorum"] != want {
		errf("quorum %s; a majority of %d lock nodes is %s", kv["quorum"], len(lock), want)
	}
	for k, tok := range tokens {
		from, to, yes, outcome := rederiveAttempt(res, client, tok, lock)
		if k == 0 && strconv.FormatInt(int64(from), 10) != kv["from"] {
			errf("drawn from %s ns; %s's first SET of %s was sent at %d ns", kv["from"], client, tok, from)
		}
		if k == len(tokens)-1 && strconv.FormatInt(int64(to), 10) != kv["to"] {
			errf("drawn to %s ns; %s decided on %s at %d ns", kv["to"], client, tok, to)
		}
		if strconv.Itoa(yes) != kv["yes"] {
			errf("drawn with %s yes votes; %d replies of +OK to %s's SET of %s reached it", kv["yes"], yes, client, tok)
		}
		if outcome != kv["outcome"] {
			errf("drawn as %s; the events of %s's attempt with %s say %s", kv["outcome"], client, tok, outcome)
		}
	}
	return errs
}

// rederiveAttempt reads one attempt (client, token) from the whole log: when
// its first SET went out, when the client acted on the count (its next
// command on the lock, a hold, a refusal; a client that does nothing until
// its next attempt decided at its last answer), the +OK replies that
// reached it, and the outcome: held, or why not (validity: a quorum said
// yes; timeout: an asked node's answer never came; quorum otherwise).
func rederiveAttempt(res *runner.Result, client, tok string, lock map[string]bool) (from, to time.Duration, yes int, outcome string) {
	key := res.Scenario.Key
	asked := map[string]bool{}
	granted := map[string]bool{}
	ran := map[string]bool{}
	unheard := map[string]bool{}
	first, lastSet := -1, -1
	for i, e := range res.Events {
		if e.Kind == event.CommandSent && e.Actor == client && len(e.Args) >= 3 && e.Args[1] == key && e.Args[2] == tok && lock[e.Node] {
			if first < 0 {
				first = i
			}
			lastSet = i
			asked[e.Node] = true
		}
	}
	from = res.Events[first].At
	decided, lastAnswer := -1, from
	for i := lastSet + 1; i < len(res.Events) && decided < 0; i++ {
		e := res.Events[i]
		if e.Actor != client {
			continue
		}
		switch e.Kind {
		case event.HoldBegan, event.AcquireFailed, event.AcquireGaveUp:
			decided = i
		case event.CommandSent:
			if len(e.Args) >= 3 && strings.EqualFold(e.Args[0], "set") && e.Args[1] == key {
				decided = -2 // the next attempt: no decision of its own
			} else if slices.Contains(e.Args[1:], key) || slices.Contains(e.Args[1:], "fence:"+key) {
				decided = i
			}
		}
		if decided == -2 {
			break
		}
	}
	end := res.End
	if decided >= 0 {
		end = res.Events[decided].At
	}
	for i := first; i < len(res.Events) && res.Events[i].At <= end; i++ {
		e := res.Events[i]
		switch {
		case e.Kind == event.CommandExecuted && lock[e.Node] && len(e.Args) >= 3 && e.Args[1] == key && e.Args[2] == tok && asked[e.Node]:
			ran[e.Node], granted[e.Node] = true, e.Reply == "+OK"
			lastAnswer = max(lastAnswer, e.At)
		case (e.Kind == event.MessageDropped || e.Kind == event.MessageLost) && e.Dir == "reply" && e.To == client && e.Op == "SET" && asked[e.From]:
			unheard[e.From] = true
			lastAnswer = max(lastAnswer, e.At)
		case e.Kind == event.ReplyTimeout && e.Actor == client && asked[e.Node]:
			unheard[e.Node] = true
			lastAnswer = max(lastAnswer, e.At)
		}
	}
	to = lastAnswer
	if decided >= 0 {
		to = res.Events[decided].At
	}
	missing := false
	for n := range asked {
		if granted[n] && !unheard[n] {
			yes++
		}
		if !ran[n] || unheard[n] {
			missing = true
		}
	}
	held := false
	for _, e := range res.Events {
		if e.Kind == event.HoldBegan && e.Actor == client && e.LockValue == tok {
			held = true
		}
	}
	switch {
	case held:
		outcome = "held"
	case yes >= len(lock)/2+1:
		outcome = failValidity
	case missing:
		outcome = failTimeout
	default:
		outcome = failQuorum
	}
	return from, to, yes, outcome
}

// subtitleClaim re-derives a server row's subtitle: a host that was
// promoted says when (its last change of role); one that dials database
// servers for the clients is a pool (a pooler when the clients dial it);
// no other host is called either.
func subtitleClaim(res *runner.Result, s shape) []string {
	f := strings.SplitN(s.Label, " ", 3)
	host, sub := f[1], f[2]
	last := ""
	dials, dialed := false, false
	for _, e := range res.Events {
		switch {
		case (e.Kind == event.Promoted || e.Kind == event.DBPromoted) && e.Node == host:
			last = "promoted at " + fmt.Sprintf("%.3fs", e.At.Seconds())
		case e.Kind == event.MasterRejoined && e.Node == host:
			last = "replica of " + e.To + " at " + fmt.Sprintf("%.3fs", e.At.Seconds())
		case e.Kind == event.DBConnOpened && e.Client == host:
			dials = true
		case e.Kind == event.DBConnOpened && e.Node == host:
			dialed = true
		}
	}
	var want string
	switch {
	case last != "":
		want = last
	case dials && dialed:
		want = "pooler in front of"
	case dials:
		want = "shared connection pool to"
	}
	switch {
	case want != "" && !strings.HasPrefix(sub, want):
		return []string{fmt.Sprintf("%s's subtitle %q; its events say %q", host, sub, want)}
	case want == "" && (strings.Contains(sub, "pool") || strings.Contains(sub, "promoted")):
		return []string{fmt.Sprintf("%s's subtitle %q; no event says so", host, sub)}
	case want != "" && s.Events == "":
		return []string{fmt.Sprintf("%s's subtitle %q names no event", host, sub)}
	}
	return nil
}

// lockDataClaim: a node lane that reads "no lock key" ran no command on
// the lock's structures beyond its plain key, and one that names them
// names exactly those its node touched.
func lockDataClaim(res *runner.Result, label string) []string {
	f := strings.Fields(label)
	node, key := f[1], res.Scenario.Key
	var touched []string
	for _, e := range res.Events {
		if e.Kind != event.CommandExecuted || e.Node != node || len(e.Args) < 2 {
			continue
		}
		var names []string
		for _, a := range e.Args[1:] {
			if a == key || strings.HasPrefix(a, key+":") {
				names = append(names, a)
			}
		}
		plain := len(names) == 1 && names[0] == key && !strings.EqualFold(e.Args[0], "zadd") &&
			!strings.EqualFold(e.Args[0], "zrem") && !strings.EqualFold(e.Args[0], "zremrangebyscore") && !strings.EqualFold(e.Args[0], "zrank")
		if plain {
			continue
		}
		for _, n := range names {
			if !slices.Contains(touched, n) {
				touched = append(touched, n)
			}
		}
	}
	drawn := ""
	if f[0] == "lockdata" {
		drawn = f[2]
	}
	if got := strings.Join(touched, ","); got != drawn {
		return []string{fmt.Sprintf("%s's lane: %q; the node ran commands on the lock's structures %q", node, label, got)}
	}
	return nil
}

// sessionClaims re-derives the ZooKeeper connection states drawn: a
// SUSPENDED span begins where the client's link to a server was cut, a
// LOST one where the ensemble expired a session of that client; and the
// other way round, at the instant the ensemble expires a client's latest
// session, the client is not drawn CONNECTED.
func sessionClaims(res *runner.Result, labels []string) []string {
	var errs []string
	type span struct {
		state string
		from  float64
	}
	drawn := map[string][]span{}
	for _, l := range labels {
		f := strings.Fields(l)
		from, _ := strconv.ParseFloat(strings.TrimSuffix(f[len(f)-1], "s"), 64)
		drawn[f[1]] = append(drawn[f[1]], span{strings.Join(f[2:len(f)-1], " "), from})
	}
	sec := func(d time.Duration) float64 {
		v, _ := strconv.ParseFloat(fmt.Sprintf("%.3f", d.Seconds()), 64)
		return v
	}
	clientOf := map[string]string{}
	last := map[string]string{} // client → its latest session
	var cuts, expiries, closes []event.Event
	for _, e := range res.Events {
		switch e.Kind {
		case event.SessionCreated:
			clientOf[e.Session] = e.Client
			last[e.Client] = e.Session
		case event.LinkCut:
			cuts = append(cuts, e)
		case event.ConnClosedBy, event.ConnReset:
			closes = append(closes, e)
		case event.SessionExpired:
			if c := clientOf[e.Session]; last[c] == e.Session && len(drawn[c]) > 0 {
				expiries = append(expiries, e)
			}
		}
	}
	for c, spans := range drawn {
		for _, sp := range spans {
			ok := true
			switch sp.state {
			case "SUSPENDED":
				ok = slices.ContainsFunc(cuts, func(e event.Event) bool { return (e.From == c || e.To == c) && sec(e.At) == sp.from })
			case "LOST", "LOST (" + strings.TrimPrefix(sp.state, "LOST ("):
				// An expiry, or after one the server closing the
				// connection it still answered on.
				ok = slices.ContainsFunc(expiries, func(e event.Event) bool { return clientOf[e.Session] == c && sec(e.At) == sp.from }) ||
					sp.state == "LOST" && slices.ContainsFunc(closes, func(e event.Event) bool { return e.Client == c && sec(e.At) == sp.from }) &&
						slices.ContainsFunc(expiries, func(e event.Event) bool { return clientOf[e.Session] == c && sec(e.At) < sp.from })
			}
			if !ok {
				errs = append(errs, fmt.Sprintf("%s drawn %s from %.3fs: no event of that kind for %s then", c, sp.state, sp.from, c))
			}
		}
	}
	for _, e := range expiries {
		c := clientOf[e.Session]
		state := ""
		for _, sp := range drawn[c] {
			if sp.from <= sec(e.At) {
				state = sp.state
			}
		}
		if strings.HasPrefix(state, "CONNECTED") {
			errs = append(errs, fmt.Sprintf("%s drawn %s at %.3fs, when the server expired its session cut off from it", c, state, sec(e.At)))
		}
	}
	return errs
}

// permitClaim re-derives one entry of a semaphore's set: a ZADD of its
// token ran on its node (queued in a MULTI, it takes effect at the
// client's EXEC, which is when the entry is drawn from); its end is the
// owner's ZREM of it, or another client's ZREMRANGEBYSCORE whose upper
// bound reaches the entry's score, taking effect then; or the run's end.
func permitClaim(res *runner.Result, label string) []string {
	words, kv := labelFields(label)
	node, tok, key := words[1], words[2], res.Scenario.Key
	from, _ := strconv.ParseInt(kv["from"], 10, 64)
	to, _ := strconv.ParseInt(kv["to"], 10, 64)
	why, _ := url.QueryUnescape(kv["end"])
	effective := func(e event.Event, at time.Duration) bool {
		if e.At == at && e.Reply != "+QUEUED" {
			return true
		}
		// Queued: its client's next EXEC on the node runs at at.
		for _, x := range res.Events {
			if x.At > at {
				break
			}
			if x.At >= e.At && x.At == at && x.Kind == event.CommandExecuted && x.Node == e.Node && x.Client == e.Client && len(x.Args) == 1 && strings.EqualFold(x.Args[0], "exec") {
				return true
			}
		}
		return false
	}
	score := math.NaN()
	began := false
	for _, e := range res.Events {
		if e.Kind == event.CommandExecuted && e.Node == node && len(e.Args) >= 4 && strings.EqualFold(e.Args[0], "zadd") && e.Args[1] == key && e.Args[len(e.Args)-1] == tok {
			if effective(e, time.Duration(from)) {
				began = true
				score, _ = strconv.ParseFloat(e.Args[len(e.Args)-2], 64)
			}
		}
	}
	if !began {
		return []string{fmt.Sprintf("%q: no ZADD of %s on %s takes effect at %d ns", label, tok, node, from)}
	}
	ended := false
	for _, e := range res.Events {
		if e.Kind != event.CommandExecuted || e.Node != node || len(e.Args) < 3 || e.Args[1] != key || !effective(e, time.Duration(to)) {
			continue
		}
		switch {
		case strings.EqualFold(e.Args[0], "zrem") && slices.Contains(e.Args[2:], tok):
			ended = ended || why == "released" || why == "removed by "+e.Client
		case strings.EqualFold(e.Args[0], "zremrangebyscore") && len(e.Args) >= 4:
			hi, err := strconv.ParseFloat(strings.TrimPrefix(e.Args[3], "("), 64)
			if e.Args[3] == "+inf" || err == nil && score <= hi {
				ended = ended || strings.HasPrefix(why, "removed by ") && strings.HasSuffix(why, "cleanup")
			}
		}
	}
	if why == "end of run" {
		ended = time.Duration(to) == res.End
	}
	if !ended {
		return []string{fmt.Sprintf("%q: no command removes %s from %s's set as %q at %d ns", label, tok, node, why, to)}
	}
	return nil
}

// replClaim re-derives a replication arrow: a lost one's events are
// effects from its master lost or dropped on their way to its replica (the
// arrow's target); an applied one's are the master's write (a command that
// changed its data) and the replica's applying of it from that master, at
// the times the arrow joins — so the lag is measured, and an effect whose
// master had written before it is never drawn without one.
func replClaim(res *runner.Result, s shape) []string {
	var errs []string
	errf := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf("%q: ", s.Label)+fmt.Sprintf(format, args...))
	}
	words, kv := labelFields(s.Label)
	from, to := words[1], words[2]
	ids, err := parseIDs(s.Events)
	if err != nil {
		return []string{err.Error()}
	}
	if words[0] == "repllost" {
		for _, id := range ids {
			e := res.Events[id]
			lost := e.Kind == event.ReplicationLost || (e.Kind == event.MessageLost || e.Kind == event.MessageDropped) && e.Op == "REPLICATE"
			if !lost || e.From != from || e.To != to {
				errf("event %d (%s %s → %s) is not an effect of %s lost on its way to %s", id, e.Kind, e.From, e.To, from, to)
			}
		}
		return errs
	}
	applied := res.Events[ids[len(ids)-1]]
	if applied.Kind != event.ReplicationApplied || applied.Node != to || applied.From != from || strconv.FormatInt(int64(applied.At), 10) != kv["arrived"] {
		errf("event %d is not %s applying an effect of %s at %s ns", ids[len(ids)-1], to, from, kv["arrived"])
	}
	if kv["known"] == "true" {
		w := res.Events[ids[0]]
		changed := w.Reply == "+OK" || strings.HasPrefix(w.Reply, ":") && w.Reply != ":0"
		if len(ids) != 2 || w.Kind != event.CommandExecuted || w.Node != from || !changed || strconv.FormatInt(int64(w.At), 10) != kv["sent"] || w.At > applied.At {
			errf("event %d is not a write %s ran at %s ns before the replica applied it", ids[0], from, kv["sent"])
		}
		return errs
	}
	synced := time.Duration(-1)
	for _, e := range res.Events {
		if e.Kind == event.ReplicationFullSync && e.Node == to && e.From == from && e.At <= applied.At {
			synced = e.At
		}
	}
	for _, e := range res.Events {
		if e.Kind == event.CommandExecuted && e.Node == from && e.At > synced && e.At <= applied.At && (e.Reply == "+OK" || strings.HasPrefix(e.Reply, ":") && e.Reply != ":0") {
			errf("drawn without a lag, though %s wrote at %v before %s applied it", from, e.At, to)
			break
		}
	}
	return errs
}

// rwClaim re-derives a hold in a reader-writer lock's hash: the node ran
// the read or write script (the mode drawn) for the token and answered 1
// at its start; it ends where the node ran the release script for the
// token as often as it granted it, or where the hash expired on the node.
func rwClaim(res *runner.Result, label string) []string {
	words, kv := labelFields(label)
	node, tok, mode, key := words[1], words[2], words[3], res.Scenario.Key
	from, _ := strconv.ParseInt(kv["from"], 10, 64)
	to, _ := strconv.ParseInt(kv["to"], 10, 64)
	why, _ := url.QueryUnescape(kv["end"])
	script := map[string]string{"read": algorithms.ScriptRWRead, "write": algorithms.ScriptRWWrite}[mode]
	ran := func(e event.Event, body string, at time.Duration) bool {
		return e.Kind == event.CommandExecuted && e.Node == node && e.At == at && e.Reply == ":1" && len(e.Args) >= 5 && e.Args[1] == body && e.Args[3] == key && slices.Contains(e.Args[4:], tok)
	}
	began, ended, grants, releases := false, why == "end of run" && time.Duration(to) == res.End, 0, 0
	for _, e := range res.Events {
		if e.At < time.Duration(from) || e.At > time.Duration(to) {
			continue
		}
		if ran(e, script, e.At) {
			grants++
			began = began || e.At == time.Duration(from)
		}
		if ran(e, algorithms.ScriptRWRelease, e.At) {
			releases++
		}
		if e.Kind == event.KeyExpired && e.Node == node && e.Key == key && e.At > time.Duration(from) && e.At < time.Duration(to) {
			return []string{fmt.Sprintf("%q: drawn across the hash's expiry on %s at %v", label, node, e.At)}
		}
		switch {
		case why == "released" && ran(e, algorithms.ScriptRWRelease, time.Duration(to)):
			ended = true
		case why == "expired" && e.Kind == event.KeyExpired && e.Node == node && e.Key == key && e.At == time.Duration(to):
			ended = true
		}
	}
	var errs []string
	if !began {
		errs = append(errs, fmt.Sprintf("%q: %s ran no %s script for %s at %d ns", label, node, mode, tok, from))
	}
	if !ended || why == "released" && grants != releases {
		errs = append(errs, fmt.Sprintf("%q: no event ends it as %q at %d ns (%d grants, %d releases)", label, why, to, grants, releases))
	}
	return errs
}
