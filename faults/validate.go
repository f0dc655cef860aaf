package faults

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// MaxDuration bounds every duration of a schedule (and, by default, of a
// scenario file): a year, far beyond any run, and small enough that the sum
// of a fault's time and its length never overflows int64 nanoseconds.
const MaxDuration = 8760 * time.Hour

// Problem is one thing wrong with a fault: Field is the yaml key inside the
// fault ("target", "after.op"), Msg what was expected and found.
type Problem struct {
	Field string
	Msg   string
}

func (p Problem) Error() string { return p.Field + ": " + p.Msg }

// kindFields are the keys each kind reads beside kind, at, after and note.
// A key given to a kind that ignores it is an error: a probability on a
// pause, a jump on a crash would otherwise be silently dropped from the
// experiment.
var kindFields = map[Kind][]string{
	Pause:     {"target", "duration"},
	Crash:     {"target"},
	Hang:      {"target", "duration"},
	Drop:      {"dir", "client", "node", "op", "count", "probability", "duration"},
	Delay:     {"dir", "client", "node", "op", "count", "probability", "duration"},
	ClockJump: {"target", "jump"},
	Drift:     {"target", "ppm"},
	NodeCrash: {"target", "restart_after", "persistence"},
	Failover:  {"target"},
	Partition: {"groups", "one_way", "duration"},
	Heal:      {},
}

var commonFields = []string{"kind", "at", "after", "note"}

// Validate checks one fault against the names of a scenario and returns the
// first problem (see Problems).
func (f Fault) Validate(n Names) error {
	if ps := f.Problems(n); len(ps) > 0 {
		return ps[0]
	}
	return nil
}

// Problems lists everything wrong with one fault: which field, what was
// expected, what was found. Durations outside [0, MaxDuration] (jumps
// outside ±MaxDuration) are refused here too, so a schedule built in Go is
// held to the same ranges as one read from a file.
func (f Fault) Problems(n Names) []Problem {
	p := &problemList{}
	allowed, known := kindFields[f.Kind]
	switch {
	case f.Kind == "":
		p.bad("kind", "missing; expected one of %s", kindList())
		return p.out
	case !known:
		msg := fmt.Sprintf("unknown fault kind %q; expected one of %s", f.Kind, kindList())
		if s := closest(string(f.Kind), kindNames()); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", s)
		}
		p.bad("kind", "%s", msg)
		return p.out
	}
	f.unusedFieldProblems(p, allowed)
	f.timingProblems(p, n)
	f.kindProblems(p, n)
	return p.out
}

// problemList collects a fault's problems in the order they are found.
type problemList struct{ out []Problem }

func (p *problemList) bad(field, format string, args ...any) {
	p.out = append(p.out, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
}

// unusedFieldProblems refuses every field the fault's kind does not read
// (allowed: the kind's own fields, kindFields).
func (f Fault) unusedFieldProblems(p *problemList, allowed []string) {
	v := reflect.ValueOf(f)
	t := v.Type()
	for i := range t.NumField() {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if key == "" || key == "-" || slices.Contains(commonFields, key) || slices.Contains(allowed, key) {
			continue
		}
		if !v.Field(i).IsZero() {
			takes := strings.Join(append(slices.Clone(allowed), commonFields[1:]...), ", ")
			p.bad(key, "a %s fault does not use %s; expected only %s", f.Kind, key, takes)
		}
	}
}

// timingProblems checks when the fault happens: at or an after trigger,
// and every duration's range.
func (f Fault) timingProblems(p *problemList, n Names) {
	if f.At != nil && f.After != nil {
		p.bad("after", "give either at or after, not both")
	}
	if f.At == nil && f.After == nil && f.Kind != Drop && f.Kind != Delay && f.Kind != Drift {
		p.bad("at", "missing; expected a true time such as 1.5s, or an after trigger")
	}
	durations := []struct {
		field string
		d     Duration
		lo    time.Duration
	}{{"duration", f.Duration, 0}, {"restart_after", f.RestartAfter, 0}, {"jump", f.Jump, -MaxDuration}}
	if f.At != nil {
		durations = append(durations, struct {
			field string
			d     Duration
			lo    time.Duration
		}{"at", *f.At, 0})
	}
	for _, d := range durations {
		if d.d.D() < d.lo || d.d.D() > MaxDuration {
			p.bad(d.field, "expected a duration between %s and %s, found %v", Human(d.lo), Human(MaxDuration), d.d)
		}
	}
	if f.After != nil {
		if f.After.Client != "" && !slices.Contains(n.Clients, f.After.Client) {
			p.bad("after.client", "%s", unknown("client", f.After.Client, n.Clients))
		}
		if f.After.Node != "" && !slices.Contains(n.hosts(), f.After.Node) {
			p.bad("after.node", "%s", unknown("node", f.After.Node, n.hosts()))
		}
		if f.After.Dir != "" && f.After.Dir != "reply" && f.After.Dir != "request" {
			p.bad("after.dir", "expected request or reply, found %q", f.After.Dir)
		}
		if f.After.Nth < 0 {
			p.bad("after.nth", "expected a count >= 1, found %d", f.After.Nth)
		}
		if f.After.Op != "" && !KnownOp(f.After.Op) {
			p.bad("after.op", "%s", unknownOp(f.After.Op))
		}
	}
}

// needTarget checks that the fault names one of names (kinds says what
// they are).
func (f Fault) needTarget(p *problemList, kinds string, names []string) {
	switch {
	case f.Target == "":
		p.bad("target", "missing; expected one of %s", strings.Join(names, ", "))
	case !slices.Contains(names, f.Target):
		p.bad("target", "%s", unknown(kinds, f.Target, names))
	}
}

// kindProblems checks the fields each kind needs.
func (f Fault) kindProblems(p *problemList, n Names) {
	switch f.Kind {
	case Pause:
		f.needTarget(p, "client", n.Clients)
		if f.Duration <= 0 {
			p.bad("duration", "expected how long the pause lasts, such as 15s")
		}
	case Crash:
		f.needTarget(p, "client", n.Clients)
	case Hang:
		f.needTarget(p, "client", n.Clients)
	case Failover:
		f.failoverProblems(p, n)
	case ClockJump:
		f.needTarget(p, "client or node", n.hosts())
		if f.Jump == 0 {
			p.bad("jump", "expected a non-zero clock jump such as 10s or -2s")
		}
	case Drift:
		f.needTarget(p, "client or node", n.hosts())
		if f.PPM <= -1_000_000 || f.PPM > 1_000_000 {
			p.bad("ppm", "expected a rate offset in (-1000000, 1000000] (-1000000 would stop the clock), found %d", f.PPM)
		}
	case Drop, Delay:
		f.linkProblems(p, n)
	case NodeCrash:
		f.nodeCrashProblems(p, n)
	case Partition:
		f.partitionProblems(p, n)
	}
}

// failoverProblems checks a failover's target: a replica or standby of
// the scenario.
func (f Fault) failoverProblems(p *problemList, n Names) {
	switch {
	case len(n.Replicas) == 0 && len(n.Standbys) == 0:
		how := n.NothingToPromote
		if how == "" {
			how = "this scenario has no replica to promote; give a node replica_of"
		}
		p.bad("target", "%s", how)
	case len(n.Standbys) > 0:
		f.needTarget(p, "replica or standby", append(slices.Clone(n.Replicas), n.Standbys...))
	default:
		f.needTarget(p, "replica", n.Replicas)
	}
}

// linkProblems checks a drop's or delay's message pattern and amounts.
func (f Fault) linkProblems(p *problemList, n Names) {
	if f.Dir != "" && f.Dir != "request" && f.Dir != "reply" {
		p.bad("dir", "expected request or reply, found %q", f.Dir)
	}
	if f.Client != "" && !slices.Contains(n.Clients, f.Client) {
		p.bad("client", "%s", unknown("client", f.Client, n.Clients))
	}
	if f.Node != "" && !slices.Contains(n.hosts(), f.Node) {
		p.bad("node", "%s", unknown("node", f.Node, n.hosts()))
	}
	if f.Op != "" && !KnownOp(f.Op) {
		p.bad("op", "%s", unknownOp(f.Op))
	}
	if math.IsNaN(f.Probability) || f.Probability < 0 || f.Probability > 1 {
		p.bad("probability", "expected a number in [0, 1], found %v", f.Probability)
	}
	if f.Count < 0 {
		p.bad("count", "expected a count >= 0, found %d", f.Count)
	}
	if f.Kind == Delay && f.Duration <= 0 {
		p.bad("duration", "expected the delay to add, such as 2s")
	}
}

// nodeCrashProblems checks a node crash's target and persistence.
func (f Fault) nodeCrashProblems(p *problemList, n Names) {
	f.needTarget(p, "node", append(slices.Clone(n.Nodes), n.Servers...))
	switch {
	case f.Persistence != "" && slices.Contains(n.Servers, f.Target) && !slices.Contains(n.Nodes, f.Target):
		// A ZooKeeper server fsyncs its transaction log before it
		// acknowledges a proposal (ZooKeeper Administrator's Guide,
		// forceSync), so a restart keeps everything it acknowledged:
		// there is no setting to choose.
		if !strings.HasPrefix(f.Target, "zk") {
			// A database server or pooler (sim/dbnet): a restart
			// keeps its tables and loses its advisory locks, always.
			p.bad("persistence", "%s is a database server or pooler: a restart keeps its tables and never its advisory locks; persistence applies to Redis nodes only: remove it", f.Target)
			break
		}
		p.bad("persistence", "%s is a ZooKeeper server, which logs every write to disk before acknowledging it; persistence applies to Redis nodes only: remove it", f.Target)
	case f.Persistence == "", f.Persistence == "none", f.Persistence == "everysec", f.Persistence == "always":
	default:
		p.bad("persistence", "expected none, everysec or always, found %q", f.Persistence)
	}
}

// partitionProblems checks a partition's two groups of known hosts.
func (f Fault) partitionProblems(p *problemList, n Names) {
	if len(f.Groups) != 2 {
		p.bad("groups", "expected two groups of hosts, such as [[c1, A], [B, C]], found %d", len(f.Groups))
		return
	}
	for gi, g := range f.Groups {
		if len(g) == 0 {
			p.bad(fmt.Sprintf("groups[%d]", gi), "expected at least one host, found an empty group")
		}
		// Each unknown name is refused once, at its first use: a
		// group of a thousand aliases of one unknown name printed a
		// thousand equal lines at the group's position (issue 32).
		said := map[string]bool{}
		for hi, h := range g {
			if !slices.Contains(n.hosts(), h) && !said[h] {
				said[h] = true
				p.bad(fmt.Sprintf("groups[%d][%d]", gi, hi), "%s", unknown("host", h, n.hosts()))
			}
		}
	}
}

func unknown(kind, name string, names []string) string {
	msg := fmt.Sprintf("unknown %s %q; expected one of %s", kind, name, strings.Join(names, ", "))
	if s := closest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return msg
}

func unknownOp(op string) string {
	msg := fmt.Sprintf("unknown op %q; expected a Redis command (SET, EVAL, ...), a ZooKeeper request (CREATE, DELETE, ...), a Postgres statement (PG_ADVISORY_UNLOCK, COMMIT, ...), a MySQL statement (GET_LOCK, RELEASE_LOCK, ...), an NFS operation (LOCK, LINK, ...) or READ/WRITE at the resource", op)
	if s := closest(strings.ToUpper(op), KnownOps()); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	return msg
}

func kindNames() []string {
	var s []string
	for _, k := range Kinds {
		s = append(s, string(k))
	}
	return s
}

func kindList() string { return strings.Join(kindNames(), ", ") }

// Validate checks every fault; errors name the fault by index.
func (s Schedule) Validate(n Names) error {
	for i, f := range s {
		if err := f.Validate(n); err != nil {
			return fmt.Errorf("faults[%d] (%s): %w", i, f.Kind, err)
		}
	}
	return nil
}

func closest(s string, candidates []string) string { return Closest(s, candidates) }

// Closest is the candidate a typo of s most likely meant: the nearest by
// edit distance (ignoring case), if within a third of the word's length
// (at least one edit); "" when none is that close or s is exact.
func Closest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if c == s {
			return ""
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(1, min(len(s), len(best))/3) {
		return best
	}
	return ""
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of neighbours ("pasue") cost one.
// Inputs are keys and names, cut to 64 runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 {
		ra = ra[:64]
	}
	if len(rb) > 64 {
		rb = rb[:64]
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Human writes a duration without trailing zero units ("24h", not
// "24h0m0s"), for messages.
func Human(d time.Duration) string {
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// Names reports whether f names host: as its target, the node of a
// message rule, or a member of a partition's groups.
func (f Fault) Names(host string) bool {
	if f.Target == host || f.Node == host {
		return true
	}
	for _, g := range f.Groups {
		if slices.Contains(g, host) {
			return true
		}
	}
	return false
}
