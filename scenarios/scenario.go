// Package scenarios holds locklab's scenario catalogue and runs scenarios.
//
// A scenario is data: the nodes and clients, the algorithm and its
// parameters, the workload, the fault schedule, the expected verdict and a
// narrative that explains what happens, why, and the fix. The catalogue ships
// as YAML files embedded in the binary; users run their own files the same way.
package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/faults"
	"go.yaml.in/yaml/v3"
)

// Duration is faults.Duration: Go duration text in files.
type Duration = faults.Duration

// Range is a closed range of durations written "50ms..150ms" (or a single
// duration). Values are drawn uniformly from the world's random source.
type Range struct {
	Min, Max time.Duration
	// set records that the range was written down, so that an explicit
	// "0s" (every client at once) is not replaced by the default.
	set bool
}

// IsZero makes YAML's omitempty keep an explicit "0s".
func (r Range) IsZero() bool { return r.isDefault() }

// isDefault reports whether the range was left out.
func (r Range) isDefault() bool { return !r.set && r.Min == 0 && r.Max == 0 }

// UnmarshalYAML reads "a..b" or "a".
func (r *Range) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseRange(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	*r = v
	return nil
}

// MarshalYAML writes "a..b".
func (r Range) MarshalYAML() (any, error) { return r.String(), nil }

// MarshalText writes "a..b" (JSON).
func (r Range) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads "a..b" (JSON).
func (r *Range) UnmarshalText(b []byte) error {
	v, err := ParseRange(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

func (r Range) String() string {
	if r.Min == r.Max {
		return r.Min.String()
	}
	return r.Min.String() + ".." + r.Max.String()
}

// ParseRange parses "a..b" or "a".
func ParseRange(s string) (Range, error) {
	lo, hi, found := strings.Cut(s, "..")
	if !found {
		hi = lo
	}
	a, err := faults.ParseDuration(lo)
	if err != nil {
		return Range{}, fmt.Errorf("expected a duration or a range such as 50ms..150ms: %v", err)
	}
	b, err := faults.ParseDuration(hi)
	if err != nil {
		return Range{}, fmt.Errorf("expected a duration or a range such as 50ms..150ms: %v", err)
	}
	if a < 0 || b < a {
		return Range{}, fmt.Errorf("expected a range min..max with 0 <= min <= max, got %q", s)
	}
	return Range{Min: time.Duration(a), Max: time.Duration(b), set: true}, nil
}

// Node describes a Redis node and its clock.
type Node struct {
	Name string `yaml:"name" json:"name"`
	// Offset is the clock's offset from true time; PPM its rate offset.
	Offset Duration `yaml:"offset,omitempty" json:"offset,omitempty"`
	PPM    int64    `yaml:"ppm,omitempty" json:"ppm,omitempty"`
	// Replica, when set, names the master this node replicates from.
	Replica string `yaml:"replica_of,omitempty" json:"replica_of,omitempty"`
	// Lag is the replication delay of a replica (default 100ms).
	Lag Duration `yaml:"lag,omitempty" json:"lag,omitempty"`
	// Role is "" for a lock node, or "tokens" for the node that only hands
	// out fencing tokens (INCR) and takes no part in the lock.
	Role string `yaml:"role,omitempty" json:"role,omitempty"`
}

// UnmarshalYAML accepts a bare name as shorthand for {name: X}.
func (n *Node) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.ScalarNode {
		n.Name = v.Value
		return nil
	}
	type plain Node
	return v.Decode((*plain)(n))
}

// Client overrides the defaults for one client.
type Client struct {
	Work   *Range    `yaml:"work,omitempty" json:"work,omitempty"`
	Start  *Range    `yaml:"start,omitempty" json:"start,omitempty"`
	Cycles *int      `yaml:"cycles,omitempty" json:"cycles,omitempty"`
	Offset *Duration `yaml:"offset,omitempty" json:"offset,omitempty"`
	PPM    *int64    `yaml:"ppm,omitempty" json:"ppm,omitempty"`
	// LibraryRetries overrides clients.library_retries for this client.
	LibraryRetries *bool `yaml:"library_retries,omitempty" json:"library_retries,omitempty"`
}

// Clients describes the workload: Count clients named c1..cN, each running
// Cycles lock cycles (acquire, read the resource, work, write it back minus
// one, release, think).
type Clients struct {
	Count  int   `yaml:"count" json:"count"`
	Cycles int   `yaml:"cycles,omitempty" json:"cycles,omitempty"`
	Work   Range `yaml:"work,omitempty" json:"work"`
	Think  Range `yaml:"think,omitempty" json:"think"`
	Start  Range `yaml:"start,omitempty" json:"start"`
	// Timeout is the go-redis read timeout on the client's oscillator.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// LibraryRetries keeps go-redis's default retries (re-sends after a
	// timeout); off, a lost reply is an error the algorithm sees.
	LibraryRetries bool `yaml:"library_retries,omitempty" json:"library_retries,omitempty"`
	// CheckValidity makes clients check their lease before writing, and
	// skip the write once it has expired on their own clock; their hold
	// ends at that check. Without it a client never looks at its deadline
	// and holds until it releases (see checker's package documentation).
	CheckValidity bool `yaml:"check_validity,omitempty" json:"check_validity,omitempty"`
	// Each overrides settings per client, by name.
	Each map[string]Client `yaml:"each,omitempty" json:"each,omitempty"`
}

// Resource describes the protected resource.
type Resource struct {
	Initial int64 `yaml:"initial,omitempty" json:"initial"`
	// Fencing is "none", ">" or ">=".
	Fencing string `yaml:"fencing,omitempty" json:"fencing,omitempty"`
}

// Expect is the verdict a scenario asserts; an empty field is not asserted.
type Expect struct {
	MutualExclusion checker.Status `yaml:"mutual_exclusion,omitempty" json:"mutual_exclusion,omitempty"`
	Resource        checker.Status `yaml:"resource,omitempty" json:"resource,omitempty"`
	Liveness        checker.Status `yaml:"liveness,omitempty" json:"liveness,omitempty"`
}

// Narrative is the teaching text of a scenario.
type Narrative struct {
	What    string   `yaml:"what" json:"what"`
	Why     string   `yaml:"why" json:"why"`
	Fix     string   `yaml:"fix" json:"fix"`
	Sources []string `yaml:"sources,omitempty" json:"sources,omitempty"`
}

// Network tunes latency.
type Network struct {
	Latency Duration `yaml:"latency,omitempty" json:"latency,omitempty"`
	Jitter  Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"`
}

// Wait is the lock's wait policy.
type Wait struct {
	Attempts int      `yaml:"attempts,omitempty" json:"attempts,omitempty"`
	Delay    Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	Jitter   Duration `yaml:"jitter,omitempty" json:"jitter,omitempty"`
}

// Scenario is one runnable scenario.
type Scenario struct {
	ID        string            `yaml:"id" json:"id"`
	Title     string            `yaml:"title" json:"title"`
	Algorithm string            `yaml:"algorithm" json:"algorithm"`
	Key       string            `yaml:"key,omitempty" json:"key,omitempty"`
	TTL       Duration          `yaml:"ttl" json:"ttl"`
	Wait      Wait              `yaml:"wait,omitempty" json:"wait"`
	Params    map[string]string `yaml:"params,omitempty" json:"params,omitempty"`
	Nodes     []Node            `yaml:"nodes" json:"nodes"`
	Clients   Clients           `yaml:"clients" json:"clients"`
	Resource  Resource          `yaml:"resource,omitempty" json:"resource"`
	Network   Network           `yaml:"network,omitempty" json:"network"`
	Duration  Duration          `yaml:"duration,omitempty" json:"duration"`
	// LivenessBound is the longest the lock may be unavailable while wanted.
	LivenessBound Duration `yaml:"liveness_bound,omitempty" json:"liveness_bound,omitempty"`
	// MaxHold is the longest a holder may keep the lock while others wait
	// before liveness counts it as stuck (0: no limit).
	MaxHold Duration        `yaml:"max_hold,omitempty" json:"max_hold,omitempty"`
	Faults  faults.Schedule `yaml:"faults,omitempty" json:"faults"`
	Expect  Expect          `yaml:"expect,omitempty" json:"expect"`
	// AtMost bounds figures the backend reports (for ZooKeeper:
	// watch_notifications, sessions_expired, znodes_created,
	// orphaned_znodes), as part of what the run must match: a cost claim
	// such as "the queue wakes one waiter per release" is then checked.
	// It lives beside Expect, not in it, so that Expect stays comparable.
	AtMost    map[string]int64 `yaml:"at_most,omitempty" json:"at_most,omitempty"`
	Narrative Narrative        `yaml:"narrative,omitempty" json:"narrative"`
	// Twin names the fixed (or broken) counterpart scenario.
	Twin string `yaml:"twin,omitempty" json:"twin,omitempty"`
	// Compare lists other algorithms run on the same setup, faults and seed,
	// whose verdicts and metrics are shown beside this one (the herd effect:
	// watch notifications of the simple ZooKeeper lock against the queue).
	Compare []string `yaml:"compare,omitempty" json:"compare,omitempty"`
	// Seed is the default seed.
	Seed uint64 `yaml:"seed,omitempty" json:"seed"`

	// File is where the scenario was read from ("" for the catalogue).
	File string `yaml:"-" json:"-"`
	root *yaml.Node
}

// ClientNames returns c1..cN.
func (s *Scenario) ClientNames() []string {
	var out []string
	for i := 1; i <= s.Clients.Count; i++ {
		out = append(out, fmt.Sprintf("c%d", i))
	}
	return out
}

// NodeNames returns the Redis node names in order.
func (s *Scenario) NodeNames() []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// ResourceHost is the name of the protected resource's host.
const ResourceHost = "store"

// Names returns what a fault schedule may refer to.
func (s *Scenario) Names() faults.Names {
	others := []string{ResourceHost}
	if info, err := algorithms.Lookup(s.Algorithm); err == nil {
		if b, ok := backends[info.Backend]; ok {
			others = append(others, b.hosts(s)...)
		}
	}
	var replicas []string
	for _, n := range s.Nodes {
		if n.Replica != "" {
			replicas = append(replicas, n.Name)
		}
	}
	return faults.Names{Clients: s.ClientNames(), Nodes: s.NodeNames(), Replicas: replicas, Others: others}
}

// applyDefaults fills in what a file may leave out.
func (s *Scenario) applyDefaults() {
	if s.Key == "" {
		s.Key = "lock"
	}
	if s.Clients.Cycles == 0 {
		s.Clients.Cycles = 3
	}
	if s.Clients.Work.isDefault() {
		s.Clients.Work = Range{Min: 50 * time.Millisecond, Max: 150 * time.Millisecond, set: true}
	}
	if s.Clients.Think.isDefault() {
		s.Clients.Think = Range{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond, set: true}
	}
	if s.Clients.Start.isDefault() {
		s.Clients.Start = Range{Max: 10 * time.Millisecond, set: true}
	}
	if s.Wait.Delay == 0 {
		s.Wait.Delay = Duration(100 * time.Millisecond)
	}
	if s.Wait.Jitter == 0 {
		s.Wait.Jitter = Duration(50 * time.Millisecond)
	}
	if s.Resource.Initial == 0 {
		s.Resource.Initial = 100
	}
	if s.Resource.Fencing == "" {
		s.Resource.Fencing = "none"
	}
	if s.Duration == 0 {
		s.Duration = Duration(30 * time.Second)
	}
	if s.LivenessBound == 0 && s.TTL > 0 {
		s.LivenessBound = 2*s.TTL + Duration(time.Second)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
}

// FieldError is a validation error that names a field of the file.
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (s *Scenario) fieldErr(field, format string, args ...any) error {
	return &FieldError{File: s.File, Line: lineOf(s.root, field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks the scenario and returns the first problem as a
// *FieldError naming the field and what was expected.
func (s *Scenario) Validate() error {
	if s.ID == "" {
		return s.fieldErr("id", "missing; expected a short name such as my-scenario")
	}
	info, err := algorithms.Lookup(s.Algorithm)
	if err != nil {
		return s.fieldErr("algorithm", "unknown algorithm %q; expected one of %s", s.Algorithm, strings.Join(algorithms.Names(), ", "))
	}
	if s.TTL <= 0 {
		return s.fieldErr("ttl", "missing; expected the lock's time to live, such as 10s")
	}
	if s.Clients.Count < 1 || s.Clients.Count > 1000 {
		return s.fieldErr("clients.count", "expected between 1 and 1000 clients, got %d", s.Clients.Count)
	}
	if s.Clients.Cycles < 0 {
		return s.fieldErr("clients.cycles", "expected a number of lock cycles >= 1, got %d", s.Clients.Cycles)
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"wait.delay", s.Wait.Delay}, {"wait.jitter", s.Wait.Jitter}, {"clients.timeout", s.Clients.Timeout},
		{"network.latency", s.Network.Latency}, {"network.jitter", s.Network.Jitter},
		{"liveness_bound", s.LivenessBound}, {"max_hold", s.MaxHold}} {
		if d.v < 0 {
			return s.fieldErr(d.field, "expected a duration >= 0, got %v", d.v)
		}
	}
	if s.Wait.Attempts < 0 {
		return s.fieldErr("wait.attempts", "expected a number of attempts >= 0 (0: until acquired), got %d", s.Wait.Attempts)
	}
	if s.Duration <= 0 || s.Duration.D() > 24*time.Hour {
		return s.fieldErr("duration", "expected a simulated run length between 1ms and 24h, got %v", s.Duration)
	}
	lockNodes := 0
	for _, n := range s.Nodes {
		if n.Replica == "" && n.Role == "" {
			lockNodes++
		}
	}
	if info.Backend == "redis" && lockNodes < info.MinNodes {
		return s.fieldErr("nodes", "algorithm %s needs at least %d Redis lock node(s) (not replicas, not the tokens node), got %d", s.Algorithm, info.MinNodes, lockNodes)
	}
	seen := map[string]bool{ResourceHost: true}
	for _, c := range s.ClientNames() {
		seen[c] = true
	}
	for i, n := range s.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		if n.Name == "" {
			return s.fieldErr(field, "missing node name")
		}
		if seen[n.Name] {
			return s.fieldErr(field, "duplicate host name %q (clients are c1..cN, the resource is %q)", n.Name, ResourceHost)
		}
		seen[n.Name] = true
		if n.Lag < 0 {
			return s.fieldErr(field+".lag", "expected a replication lag >= 0, got %v", n.Lag)
		}
		if n.Role != "" && n.Role != "tokens" {
			return s.fieldErr(field+".role", "expected tokens (or no role for a lock node), got %q", n.Role)
		}
		if n.PPM <= -1_000_000 || n.PPM > 1_000_000 {
			return s.fieldErr(field+".ppm", "expected a rate offset in (-1000000, 1000000], got %d", n.PPM)
		}
	}
	for i, n := range s.Nodes {
		if n.Replica != "" && (!seen[n.Replica] || n.Replica == n.Name) {
			return s.fieldErr(fmt.Sprintf("nodes[%d].replica_of", i), "expected the name of another node, got %q", n.Replica)
		}
	}
	for _, name := range sortedKeys(s.Clients.Each) {
		if !seen[name] || !strings.HasPrefix(name, "c") {
			return s.fieldErr("clients.each", "unknown client %q; expected one of %s", name, strings.Join(s.ClientNames(), ", "))
		}
	}
	for i, a := range s.Compare {
		if _, err := algorithms.Lookup(a); err != nil {
			return s.fieldErr(fmt.Sprintf("compare[%d]", i), "unknown algorithm %q; expected one of %s", a, strings.Join(algorithms.Names(), ", "))
		}
	}
	switch s.Resource.Fencing {
	case "none", ">", ">=":
	default:
		return s.fieldErr("resource.fencing", "expected none, \">\" or \">=\", got %q", s.Resource.Fencing)
	}
	for i, f := range s.Faults {
		if err := f.Validate(s.Names()); err != nil {
			field := fmt.Sprintf("faults[%d]", i)
			msg := err.Error()
			// Fault errors start with the offending field ("target: ...").
			if sub, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(sub, " ") {
				return &FieldError{File: s.File, Line: lineOf(s.root, field+"."+sub), Field: field + "." + sub, Msg: rest}
			}
			return s.fieldErr(field, "%s", msg)
		}
	}
	for _, e := range []struct {
		field string
		st    checker.Status
	}{{"expect.mutual_exclusion", s.Expect.MutualExclusion}, {"expect.resource", s.Expect.Resource}, {"expect.liveness", s.Expect.Liveness}} {
		field, st := e.field, e.st
		switch st {
		case "", checker.OK, checker.Violated, checker.Unknown:
		default:
			return s.fieldErr(field, "expected ok, violated or unknown, got %q", st)
		}
	}
	known := backendMetrics[info.Backend]
	for _, name := range sortedKeys(s.AtMost) {
		field := "at_most." + name
		if !slices.Contains(known, name) {
			if len(known) == 0 {
				return s.fieldErr(field, "the %s backend reports no metrics to bound", info.Backend)
			}
			return s.fieldErr(field, "unknown metric %q; expected one of %s", name, strings.Join(known, ", "))
		}
		if s.AtMost[name] < 0 {
			return s.fieldErr(field, "expected a bound >= 0, got %d", s.AtMost[name])
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// Parse reads a scenario from YAML. file names the source in errors.
func Parse(file string, data []byte) (*Scenario, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(file, err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &FieldError{File: file, Msg: "empty file; expected a scenario (see `locklab help scenario`)"}
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, &FieldError{File: file, Line: root.Content[0].Line, Msg: "expected a mapping of scenario fields (id, algorithm, ttl, nodes, clients, faults, ...)"}
	}
	s := &Scenario{File: file, root: &root}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(file, err)
	}
	s.applyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// yamlError turns yaml.v3's messages into "file:line: message".
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.Replace(msg, m[0], "", 1)
	}
	msg = strings.ReplaceAll(msg, "in type scenarios.", "in ")
	msg = strings.ReplaceAll(msg, "in type faults.", "in ")
	return &FieldError{File: file, Line: line, Msg: msg}
}

// lineOf finds the line of a dotted field path such as "faults[2].target" in
// the parsed document, falling back to the nearest parent found.
func lineOf(root *yaml.Node, path string) int {
	if root == nil || len(root.Content) == 0 {
		return 0
	}
	n := root.Content[0]
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			idx, _ = strconv.Atoi(part[i+1 : len(part)-1])
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == name {
				line = n.Content[k].Line
				next = n.Content[k+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

// Marshal renders the scenario as YAML (used by explore to save
// counterexamples).
func (s *Scenario) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// Clone returns a deep copy, so a caller can change faults or clients.
func (s *Scenario) Clone() *Scenario {
	c := *s
	c.root = nil
	c.Params = maps.Clone(s.Params)
	c.Nodes = slices.Clone(s.Nodes)
	c.Compare = slices.Clone(s.Compare)
	c.Narrative.Sources = slices.Clone(s.Narrative.Sources)
	if s.Clients.Each != nil {
		c.Clients.Each = make(map[string]Client, len(s.Clients.Each))
		for k, v := range s.Clients.Each {
			c.Clients.Each[k] = v // fields are pointers to values never mutated in place
		}
	}
	c.Faults = s.Faults.Clone()
	return &c
}

// params builds the algorithm's parameters.
func (s *Scenario) params() algorithms.Params {
	return algorithms.Params{
		Key:   s.Key,
		TTL:   s.TTL.D(),
		Wait:  algorithms.WaitPolicy{Attempts: s.Wait.Attempts, Delay: s.Wait.Delay.D(), Jitter: s.Wait.Jitter.D()},
		Extra: s.Params,
	}
}
