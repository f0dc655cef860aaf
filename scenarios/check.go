package scenarios

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
)

// The meaning pass of a scenario file (Validate), after its shape was
// checked (validate.go): every check with its field and what was expected.

// scenarioParams are params the runner itself reads, for any algorithm.
var scenarioParams = []algorithms.Param{algorithms.FenceStart}

// acceptedParams are the params keys an algorithm accepts.
func acceptedParams(algorithm string) ([]algorithms.Param, bool) {
	info, err := algorithms.Lookup(algorithm)
	if err != nil || info.Name == algorithms.Custom {
		return nil, false // a user's own lock reads what it likes
	}
	return slices.Concat(scenarioParams, info.Params, backendOf(info).Params), true
}

// Validate checks the meaning of the scenario (the shape of a file was
// checked when it was parsed): names resolve against their kind,
// contradictions are refused, params are ones the algorithm reads, and the
// limits hold. It returns every problem at once, as Errors (nil if none),
// and records faults that can never fire in s.Warnings.
func (s *Scenario) Validate() error {
	var errs Errors
	bad := func(field, format string, args ...any) { errs = append(errs, s.fieldErr(field, format, args...)) }
	lim := DefaultLimits
	if s.limits != nil {
		lim = *s.limits
	}
	s.Warnings = nil
	// A file written for the retired single-server ZooKeeper runs on the
	// ensemble (zookeeper.go); what was renamed is said as warnings.
	errs = append(errs, s.retireZK()...)
	// So are the keys that were renamed (params.fencing, resource.fencing;
	// retired.go).
	errs = append(errs, s.renameRetired()...)
	s.Warnings = append(s.Warnings, s.renamed...)

	info, err := s.checkHeader(bad)
	if s.TTL <= 0 || s.TTL.D() > 24*time.Hour {
		if s.TTL == 0 {
			bad("ttl", "missing; expected the lock's time to live, such as 10s")
		} else {
			bad("ttl", "expected a duration between 1ms and 24h, found %v", s.TTL)
		}
	}
	if s.Clients.Count < 1 || s.Clients.Count > lim.Clients {
		bad("clients.count", "expected between 1 and %d clients (the limit; raise it with --max-clients), found %d", lim.Clients, s.Clients.Count)
		// The checks below name the clients (c1…cN). With the count
		// refused they name only as many as the limit allows, so a count
		// of 1e9 is refused from the number alone, not after building a
		// billion names (issue 25: 21–85 s and up to 6 GiB).
		defer func(n int) { s.Clients.Count = n }(s.Clients.Count)
		s.Clients.Count = min(max(s.Clients.Count, 1), lim.Clients)
	}
	s.checkClientsAndWait(info, err == nil, lim, bad)
	lockNodes := s.checkSize(info, err == nil, lim, bad)
	clientSet := s.checkNodes(bad)
	s.checkEach(clientSet, lim, bad)
	s.checkAlgorithmFields(info, lockNodes, lim, bad)
	s.checkFaultsAndExpect(bad)
	return errs.orNil()
}

// badFunc records one problem of a file: its field and what was expected.
type badFunc = func(field, format string, args ...any)

// checkHeader checks the id, the counterexample block's format and the
// algorithm, and returns the algorithm's Info (err: it is unknown).
func (s *Scenario) checkHeader(bad badFunc) (algorithms.Info, error) {
	if s.ID == "" {
		bad("id", "missing; expected a short name such as my-scenario")
	}
	// A counterexample block without its format is a cut or hand-made
	// one: refuse it here, so that what parses also marshals and parses
	// again (the block's other fields are checked by CheckFile).
	if p := s.Counterexample; p != nil && p.Format == 0 {
		bad("counterexample.format", "missing; expected the format version %d that locklab explore writes", CounterexampleFormat)
	}
	info, err := algorithms.Lookup(s.Algorithm)
	if err != nil && s.Algorithm == "" {
		bad("algorithm", "missing; expected one of %s", strings.Join(algorithms.Names(), ", "))
	} else if err != nil {
		msg := fmt.Sprintf("unknown algorithm %q; expected one of %s", Printable(s.Algorithm, 40), strings.Join(algorithms.Names(), ", "))
		if d := DidYouMean(s.Algorithm, algorithms.Names()); d != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", d)
		}
		bad("algorithm", "%s", msg)
	}
	return info, err
}

// checkClientsAndWait checks the clients' and the wait policy's fields,
// the durations and ranges, and the counts against the limits.
func (s *Scenario) checkClientsAndWait(info algorithms.Info, known bool, lim Limits, bad badFunc) {
	if s.Clients.Cycles < 0 {
		bad("clients.cycles", "expected a number of lock cycles >= 1, found %d", s.Clients.Cycles)
	}
	if !validClockKind(s.Clients.Clock) {
		bad("clients.clock", "expected monotonic or wall, found %q%s", Printable(s.Clients.Clock, 40), suggest(s.Clients.Clock, []string{"monotonic", "wall"}))
	}
	if !validMode(s.Clients.Mode) {
		bad("clients.mode", "%s", modeMessage(s.Clients.Mode))
	}
	if s.Clients.Reenter != nil {
		s.checkReenter(info, known, bad)
	}
	if s.Clients.Permits < 0 || s.Clients.Permits > lim.Clients {
		bad("clients.permits", "expected a number of semaphore permits between 1 and %d (the client limit), found %d", lim.Clients, s.Clients.Permits)
	}
	if len(s.Nodes) > lim.Nodes {
		bad("nodes", "expected at most %d nodes (the limit; raise it with --max-nodes), found %d", lim.Nodes, len(s.Nodes))
	}
	if len(s.Faults) > lim.Faults {
		bad("faults", "expected at most %d faults (the limit; raise it with --max-faults), found %d", lim.Faults, len(s.Faults))
	}
	for _, d := range []struct {
		field string
		v     Duration
		hi    time.Duration
	}{{"wait.delay", s.Wait.Delay, time.Hour}, {"wait.jitter", s.Wait.Jitter, time.Hour}, {"clients.timeout", s.Clients.Timeout, time.Hour},
		{"network.latency", s.Network.Latency, time.Hour}, {"network.jitter", s.Network.Jitter, time.Hour},
		{"liveness_bound", s.LivenessBound, MaxDuration}, {"max_hold", s.MaxHold, MaxDuration}} {
		if d.v < 0 || d.v.D() > d.hi {
			bad(d.field, "expected a duration between 0s and %s, found %v", human(d.hi), d.v)
		}
	}
	for _, r := range []struct {
		field string
		v     Range
	}{{"clients.work", s.Clients.Work}, {"clients.think", s.Clients.Think}, {"clients.start", s.Clients.Start}} {
		if r.v.Min < 0 || r.v.Max < r.v.Min || r.v.Max > 24*time.Hour {
			bad(r.field, "expected a range min..max with 0 <= min <= max <= 24h, found %v", r.v)
		}
	}
	if s.Wait.Attempts < 0 {
		bad("wait.attempts", "expected a number of attempts >= 0 (0: until acquired), found %d", s.Wait.Attempts)
	}
	switch s.Wait.Backoff {
	case "", algorithms.BackoffFixed:
		if s.Wait.Max != 0 {
			bad("wait.max", "caps an exponential backoff, but wait.backoff is %s; expected wait.backoff: exponential, or no max", cmp.Or(s.Wait.Backoff, "fixed (the default)"))
		}
	case algorithms.BackoffExponential:
		if s.Wait.Max < 0 || s.Wait.Max.D() > time.Hour {
			bad("wait.max", "expected a duration between 0s and 1h, found %v", s.Wait.Max)
		} else if s.Wait.Max < s.Wait.Delay {
			note := ""
			if s.Wait.Max.D() == DefaultBackoffMax {
				note = fmt.Sprintf(" (wait.max defaults to %v)", DefaultBackoffMax)
			}
			bad("wait.max", "expected a cap at least wait.delay (%v), found %v%s", s.Wait.Delay, s.Wait.Max, note)
		}
	default:
		msg := fmt.Sprintf("expected %s, found %q", strings.Join(algorithms.Backoffs, " or "), Printable(s.Wait.Backoff, 40))
		if d := DidYouMean(s.Wait.Backoff, algorithms.Backoffs); d != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", d)
		}
		bad("wait.backoff", "%s", msg)
	}
}

// checkSize checks the run's length, its total lock cycles and
// connections against the limits, and that a Redis algorithm has the lock
// nodes it needs; it returns the number of lock nodes.
func (s *Scenario) checkSize(info algorithms.Info, known bool, lim Limits, bad badFunc) int {
	if s.Duration <= 0 || s.Duration.D() > lim.Duration {
		bad("duration", "expected a simulated run length between 1ms and %v (the limit; raise it with --max-duration), found %v", human(lim.Duration), s.Duration)
	}
	// Total lock cycles bound the history's size (and the run's memory).
	total := 0.0
	for _, name := range s.ClientNames() {
		c := float64(s.Clients.Cycles)
		if o, ok := s.Clients.Each[name]; ok && o.Cycles != nil {
			c = float64(*o.Cycles)
		}
		total += c
	}
	if total > float64(lim.Cycles) {
		bad("clients.cycles", "expected at most %d lock cycles in all (clients × cycles; the limit, raise it with --max-cycles), found %.0f", lim.Cycles, total)
	}

	conns := float64(s.Clients.Count) * float64(len(s.Nodes))
	if s.Params["watchdog"] == "true" {
		conns *= 2
	}
	if lim.Connections > 0 && conns > float64(lim.Connections) {
		bad("clients.count", "expected at most %d connections (clients × Redis nodes%s; the limit, raise it with --max-connections), found %.0f", lim.Connections, map[bool]string{true: " × 2 for the watchdog"}[s.Params["watchdog"] == "true"], conns)
	}
	lockNodes := 0
	for _, n := range s.Nodes {
		if n.Replica == "" && n.Role == "" {
			lockNodes++
		}
	}
	if known && backendOf(info).RedisNodes && lockNodes < info.MinNodes {
		bad("nodes", "algorithm %s needs at least %d Redis lock node(s) (not replicas, not the tokens node), found %d", s.Algorithm, info.MinNodes, lockNodes)
	}
	return lockNodes
}

// checkNodes checks the nodes: names that differ from every other host's,
// their settings, and what a replica follows. It returns the set of client
// names.
func (s *Scenario) checkNodes(bad badFunc) map[string]bool {
	// Host names: clients c1..cN, the resource, the backends' own hosts
	// (for the algorithm and every compared one) and the nodes must differ.
	reserved := map[string]string{ResourceHost: "the protected resource"}
	for _, alg := range append([]string{s.Algorithm}, s.Compare...) {
		if i, err := algorithms.Lookup(alg); err == nil {
			for _, h := range backendOf(i).hostNames(s) {
				reserved[h] = "the " + i.Backend + " server"
			}
		}
	}
	clientSet := map[string]bool{}
	for _, c := range s.ClientNames() {
		clientSet[c] = true
	}
	nodeIndex := map[string]int{}
	for i, n := range s.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		switch {
		case n.Name == "":
			bad(field+".name", "missing node name; expected a name such as A")
		case reserved[n.Name] != "":
			bad(field+".name", "the name %q is taken by %s; expected another node name", n.Name, reserved[n.Name])
		case clientSet[n.Name] || strings.HasPrefix(n.Name, "c") && isClientName(n.Name):
			bad(field+".name", "the name %q looks like a client's (clients are c1..cN); expected another node name", n.Name)
		case nodeIndex[n.Name] > 0:
			bad(field+".name", "duplicate node name %q (also nodes[%d])", n.Name, nodeIndex[n.Name]-1)
		}
		if _, dup := nodeIndex[n.Name]; !dup && n.Name != "" {
			nodeIndex[n.Name] = i + 1
		}
		if n.Lag < 0 || n.Lag.D() > time.Hour {
			bad(field+".lag", "expected a replication lag between 0s and 1h, found %v", n.Lag)
		}
		if n.Role != "" && n.Role != "tokens" {
			bad(field+".role", "expected tokens (or no role for a lock node), found %q", n.Role)
		}
		if n.PPM <= -1_000_000 || n.PPM > 1_000_000 {
			bad(field+".ppm", "expected a rate offset in (-1000000, 1000000] (-1000000 would stop the clock), found %d", n.PPM)
		}
		if n.Offset.D() < -MaxDuration || n.Offset.D() > MaxDuration {
			bad(field+".offset", "expected a clock offset between -%s and %s, found %v", human(MaxDuration), human(MaxDuration), n.Offset)
		}
		if n.MinReplicasToWrite < 0 || n.MinReplicasToWrite > 100 {
			bad(field+".min_replicas_to_write", "expected a number of replicas between 0 and 100, found %d", n.MinReplicasToWrite)
		}
		if n.MinReplicasMaxLag < 0 || n.MinReplicasMaxLag > 0 && n.MinReplicasMaxLag.D() < time.Second || n.MinReplicasMaxLag.D() > time.Hour {
			bad(field+".min_replicas_max_lag", "expected a lag between 1s and 1h (Redis counts whole seconds), found %v", n.MinReplicasMaxLag)
		}
	}
	for i, n := range s.Nodes {
		if n.Replica == "" {
			continue
		}
		field := fmt.Sprintf("nodes[%d].replica_of", i)
		// A replica follows a Redis node: not itself, not a client, not
		// the resource or a ZooKeeper server (which have no replication
		// stream to follow).
		if j := nodeIndex[n.Replica]; j == 0 || n.Replica == n.Name {
			others := slices.DeleteFunc(s.NodeNames(), func(x string) bool { return x == n.Name })
			msg := fmt.Sprintf("expected the name of another Redis node (%s), found %q", strings.Join(others, ", "), Printable(n.Replica, 40))
			if d := DidYouMean(n.Replica, others); d != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", d)
			}
			bad(field, "%s", msg)
		} else if s.Nodes[j-1].Role == "tokens" {
			bad(field, "expected a lock node to follow, found the tokens node %q", n.Replica)
		}
	}
	return clientSet
}

// checkEach checks clients.each: every entry names a client, with values
// in range.
func (s *Scenario) checkEach(clientSet map[string]bool, lim Limits, bad badFunc) {
	for _, name := range sortedKeys(s.Clients.Each) {
		field := "clients.each." + Printable(name, 40)
		if !clientSet[name] {
			msg := fmt.Sprintf("unknown client %q; expected one of %s", Printable(name, 40), strings.Join(s.ClientNames(), ", "))
			bad(field, "%s", msg)
			continue
		}
		o := s.Clients.Each[name]
		if o.Clock != nil && (*o.Clock == "" || !validClockKind(*o.Clock)) {
			bad(field+".clock", "expected monotonic or wall, found %q", Printable(*o.Clock, 40))
		}
		if o.Mode != nil && (*o.Mode == "" || !validMode(*o.Mode)) {
			bad(field+".mode", "%s", modeMessage(*o.Mode))
		}
		if o.Cycles != nil && (*o.Cycles < 0 || *o.Cycles > lim.Cycles) {
			bad(field+".cycles", "expected between 0 and %d lock cycles, found %d", lim.Cycles, *o.Cycles)
		}
		if o.PPM != nil && (*o.PPM <= -1_000_000 || *o.PPM > 1_000_000) {
			bad(field+".ppm", "expected a rate offset in (-1000000, 1000000] (-1000000 would stop the clock), found %d", *o.PPM)
		}
		if o.Offset != nil && (o.Offset.D() < -MaxDuration || o.Offset.D() > MaxDuration) {
			bad(field+".offset", "expected a clock offset between -%s and %s, found %v", human(MaxDuration), human(MaxDuration), *o.Offset)
		}
		for _, r := range []struct {
			f string
			v *Range
		}{{"work", o.Work}, {"start", o.Start}} {
			if r.v != nil && (r.v.Min < 0 || r.v.Max < r.v.Min || r.v.Max > 24*time.Hour) {
				bad(field+"."+r.f, "expected a range min..max with 0 <= min <= max <= 24h, found %v", *r.v)
			}
		}
	}
}

// checkAlgorithmFields checks what depends on the algorithm: compared
// algorithms, primitive fields, at_most's metrics, the resource's rule,
// the params the algorithm and its backend read, and the backend's own
// check.
func (s *Scenario) checkAlgorithmFields(info algorithms.Info, lockNodes int, lim Limits, bad badFunc) {
	for i, a := range s.Compare {
		ci, err := algorithms.Lookup(a)
		if err != nil {
			bad(fmt.Sprintf("compare[%d]", i), "unknown algorithm %q; expected one of %s", Printable(a, 40), strings.Join(algorithms.Names(), ", "))
			continue
		}
		// A compared algorithm runs on the same nodes: one that needs
		// more Redis lock nodes than the file has is refused here, with
		// its place, not after the main run (issue 25).
		if backendOf(ci).RedisNodes && lockNodes < ci.MinNodes {
			bad(fmt.Sprintf("compare[%d]", i), "algorithm %s needs at least %d Redis lock node(s) (not replicas, not the tokens node), but the file's nodes give %d; add nodes or compare with another algorithm", a, ci.MinNodes, lockNodes)
		}
	}
	if info.Name != "" && info.Name != algorithms.Custom {
		s.checkPrimitiveFields(info, lim, bad)
	}
	// at_most bounds figures the backend reports; a name must be one of
	// them (a typo would bound nothing).
	if info.Name != "" {
		known := backendOf(info).Metrics
		for _, name := range sortedKeys(s.AtMost) {
			field := "at_most." + Printable(name, 40)
			switch {
			case !slices.Contains(known, name) && len(known) == 0:
				bad(field, "the %s backend reports no metrics to bound", info.Backend)
			case !slices.Contains(known, name):
				msg := fmt.Sprintf("unknown metric %q; expected one of %s", Printable(name, 40), strings.Join(known, ", "))
				if d := DidYouMean(name, known); d != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", d)
				}
				bad(field, "%s", msg)
			case s.AtMost[name] < 0:
				bad(field, "expected a bound >= 0, found %d", s.AtMost[name])
			}
		}
	}
	switch s.Resource.TokenCheck {
	case "none", ">", ">=":
	default:
		bad(s.written("resource.token_check"), "expected none, \">\" or \">=\", found %q", Printable(s.Resource.TokenCheck, 40))
	}
	if accepted, ok := acceptedParams(s.Algorithm); ok {
		var names []string
		for _, p := range accepted {
			names = append(names, p.Name)
		}
		for _, k := range sortedKeys(s.Params) {
			i := slices.IndexFunc(accepted, func(p algorithms.Param) bool { return p.Name == k })
			if i < 0 {
				msg := fmt.Sprintf("%s does not read %q; expected one of %s", s.Algorithm, Printable(k, 40), strings.Join(names, ", "))
				if d := DidYouMean(k, names); d != "" {
					msg += fmt.Sprintf(" (did you mean %s?)", d)
				}
				bad(s.written("params."+Printable(k, 40)), "%s", msg)
				continue
			}
			if c := accepted[i].Check; c != nil {
				if err := c(s.Params[k]); err != nil {
					bad(s.written("params."+k), "expected %s, found %q%s", accepted[i].Expect, Printable(s.Params[k], 40), suggestChoice(s.Params[k], err))
				}
			}
		}
	}
	if check := backendOf(info).Check; info.Name != "" && check != nil {
		check(s, bad)
	}
}

// checkFaultsAndExpect checks every fault against the scenario's names,
// the clocks' total swing and the expectations, and records as warnings
// the faults that can never fire or change nothing.
func (s *Scenario) checkFaultsAndExpect(bad badFunc) {
	names := s.Names()
	// Clock arithmetic stays far from int64's limits: a host's offset plus
	// every jump of its clock, in absolute value, at most a century.
	swing := map[string]float64{}
	for i, f := range s.Faults {
		field := fmt.Sprintf("faults[%d]", i)
		for _, p := range f.Problems(names) {
			bad(field+"."+p.Field, "%s", p.Msg)
		}
		if s.Resource.Reliable && f.Names(ResourceHost) {
			bad(field, "this %s fault names the resource's host %s, but resource.reliable is true (its traffic is spared from faults); remove one of the two", f.Kind, ResourceHost)
		}
		if f.Kind == faults.ClockJump {
			swing[f.Target] += math.Abs(float64(f.Jump))
			if swing[f.Target] > float64(100*MaxDuration) && swing[f.Target]-math.Abs(float64(f.Jump)) <= float64(100*MaxDuration) {
				bad(field+".jump", "expected the clock jumps of %s to add up to at most %v, found more", f.Target, 100*MaxDuration)
			}
		}
		if w := s.clockDefaultWarning(f, names); w != "" {
			s.Warnings = append(s.Warnings, s.fieldErr(field+".target", "%s", w))
		}
		if f.At != nil && *f.At >= s.Duration && s.Duration > 0 {
			s.Warnings = append(s.Warnings, s.fieldErr(field+".at", "this %s fault can never fire: %v is not before the end of the run (duration %v)", f.Kind, *f.At, s.Duration))
		}
	}
	for _, e := range []struct {
		field string
		st    checker.Status
	}{{"expect.mutual_exclusion", s.Expect.MutualExclusion}, {"expect.resource", s.Expect.Resource}, {"expect.liveness", s.Expect.Liveness}} {
		switch e.st {
		case "", checker.OK, checker.Violated, checker.Unknown:
		default:
			bad(e.field, "expected ok, violated or unknown, found %q", Printable(string(e.st), 40))
		}
	}
}

// isClientName reports whether name is c<digits>, a client's name in any
// scenario (so a node named c7 cannot be confused with client 7 when the
// client count changes).
func isClientName(name string) bool {
	if len(name) < 2 || name[0] != 'c' {
		return false
	}
	for _, r := range name[1:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// modeMessage explains a bad hold mode, with a did-you-mean.
func modeMessage(m string) string {
	msg := fmt.Sprintf("expected read or write, found %q", Printable(m, 40))
	if d := DidYouMean(m, []string{ModeRead, ModeWrite}); d != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", d)
	}
	return msg
}

// clockDefaultWarning speaks up when a clock jump on a client relies on the
// clients.clock default, which changed: clients used to time their leases
// with the wall clock, and a step of it stretched or shortened the lease;
// they now default to the monotonic clock (Go's time.Since), which the step
// does not move. A file written before the change ran a different story
// with no word; setting clients.clock (or each.<client>.clock) says which
// one is meant.
func (s *Scenario) clockDefaultWarning(f faults.Fault, names faults.Names) string {
	if f.Kind != faults.ClockJump || !slices.Contains(names.Clients, f.Target) || s.Clients.Clock != "" {
		return ""
	}
	if over, ok := s.Clients.Each[f.Target]; ok && over.Clock != nil {
		return ""
	}
	// Only a Redis lease has a deadline on the client's clock; a ZooKeeper
	// client never read its wall clock for anything, before or after.
	if info, err := algorithms.Lookup(s.Algorithm); err != nil || info.Bubble || !backendOf(info).RedisNodes {
		return ""
	}
	return fmt.Sprintf("%s's clock jump leaves its lease alone: clients.clock is not set, and clients now default to the monotonic clock, which a step of the wall clock does not move (before, they read the wall clock and the jump moved the lease); write clients.clock: wall for the old meaning, or clients.clock: monotonic to keep this one", f.Target)
}

// checkReenter refuses clients.reenter for an algorithm (or a compared
// one) that cannot be acquired again by its holder: a nested acquire of a
// plain lock waits for the lock its own client holds.
func (s *Scenario) checkReenter(info algorithms.Info, known bool, bad func(field, format string, args ...any)) {
	var reentrant []string
	for _, name := range algorithms.Names() {
		if i, _ := algorithms.Lookup(name); i.Reentrant {
			reentrant = append(reentrant, name)
		}
	}
	if known && !info.Reentrant && info.Name != algorithms.Custom {
		bad("clients.reenter", "a nested acquire needs a reentrant algorithm, and %s is not; expected one of %s, or no reenter", s.Algorithm, strings.Join(reentrant, ", "))
	}
	for i, alg := range s.Compare {
		if ci, err := algorithms.Lookup(alg); err == nil && !ci.Reentrant {
			bad(fmt.Sprintf("compare[%d]", i), "clients.reenter needs a reentrant algorithm, and %s is not; expected one of %s", alg, strings.Join(reentrant, ", "))
		}
	}
}
