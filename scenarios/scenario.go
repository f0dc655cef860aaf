// Package scenarios holds locklab's scenario catalogue and runs scenarios.
//
// A scenario is data: the nodes and clients, the algorithm and its
// parameters, the workload, the fault schedule, the expected verdict and a
// narrative that explains what happens, why, and the fix. The catalogue ships
// as YAML files embedded in the binary; users run their own files the same way.
package scenarios

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
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

// ExplicitRange is the range min..max as if written down in a file: an
// explicit 0s (every client at once) is kept, not replaced by the default.
func ExplicitRange(min, max time.Duration) Range { return Range{Min: min, Max: max, set: true} }

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
	Offset Duration `yaml:"offset,omitempty" json:"offset,omitempty" range:"-8760h..8760h"`
	PPM    int64    `yaml:"ppm,omitempty" json:"ppm,omitempty" range:"-999999..1000000"`
	// Replica, when set, names the master this node replicates from.
	Replica string `yaml:"replica_of,omitempty" json:"replica_of,omitempty"`
	// Lag is the replication delay of a replica (default 100ms).
	Lag Duration `yaml:"lag,omitempty" json:"lag,omitempty" range:"0..1h"`
	// Role is "" for a lock node, or "tokens" for the node that only hands
	// out fencing tokens (INCR) and takes no part in the lock.
	Role string `yaml:"role,omitempty" json:"role,omitempty"`
	// MinReplicasToWrite is Redis's min-replicas-to-write (0: off): the
	// master refuses writes unless that many replicas acknowledged within
	// MinReplicasMaxLag (default 10s, Redis's default).
	MinReplicasToWrite int      `yaml:"min_replicas_to_write,omitempty" json:"min_replicas_to_write,omitempty" range:"0..100"`
	MinReplicasMaxLag  Duration `yaml:"min_replicas_max_lag,omitempty" json:"min_replicas_max_lag,omitempty"`
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
	Offset *Duration `yaml:"offset,omitempty" json:"offset,omitempty" range:"-8760h..8760h"`
	PPM    *int64    `yaml:"ppm,omitempty" json:"ppm,omitempty" range:"-999999..1000000"`
	// LibraryRetries overrides clients.library_retries for this client.
	LibraryRetries *bool `yaml:"library_retries,omitempty" json:"library_retries,omitempty"`
	// Clock overrides clients.clock for this client.
	Clock *string `yaml:"clock,omitempty" json:"clock,omitempty"`
	// Mode overrides clients.mode for this client: "read" or "write".
	Mode *string `yaml:"mode,omitempty" json:"mode,omitempty"`
}

// Hold modes a client of a reader-writer lock declares (clients.mode).
const (
	ModeRead  = checker.ModeRead
	ModeWrite = checker.ModeWrite
)

func validMode(m string) bool { return m == "" || m == ModeRead || m == ModeWrite }

// Clock kinds an algorithm may time its own lease with (Redlock's elapsed
// time and validity, the workload's validity check).
const (
	// ClockMonotonic is Go's time.Since: steps of the wall clock do not
	// move it; drift does. The default.
	ClockMonotonic = "monotonic"
	// ClockWall is the wall clock (time.Now().Round(0), a Unix timestamp):
	// a step back stretches every lease measured with it.
	ClockWall = "wall"
)

func validClockKind(k string) bool { return k == "" || k == ClockMonotonic || k == ClockWall }

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
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" range:"0..1h"`
	// LibraryRetries keeps go-redis's default retries (re-sends after a
	// timeout); off, a lost reply is an error the algorithm sees.
	LibraryRetries bool `yaml:"library_retries,omitempty" json:"library_retries,omitempty"`
	// Clock is the clock kind clients time their leases with: "monotonic"
	// (default) or "wall".
	Clock string `yaml:"clock,omitempty" json:"clock,omitempty"`
	// CheckValidity makes clients check their lease before writing, and
	// skip the write once it has expired on their own clock; their hold
	// ends at that check. Without it a client never looks at its deadline
	// and holds until it releases (see checker's package documentation).
	CheckValidity bool `yaml:"check_validity,omitempty" json:"check_validity,omitempty"`
	// Mode is the hold clients ask a reader-writer lock for: "read"
	// (shared; a reader reads the resource and never writes it) or
	// "write" (exclusive; the default). Only for an algorithm that reads
	// it (algorithms.Info.Fields); elsewhere it is refused.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Permits, when more than one, makes the lock a counting semaphore of
	// that many permits: at most Permits clients may hold at once, and
	// holders only read the resource (a semaphore bounds concurrency; it
	// does not serialize writes to one counter). Only for an algorithm
	// that reads it (algorithms.Info.Fields); elsewhere it is refused.
	Permits int `yaml:"permits,omitempty" json:"permits,omitempty"`
	// Reenter gives each critical section a nested one: the client's code
	// calls a function that takes the same lock again (a reentrant
	// acquire), works, and releases it, while the outer hold goes on.
	// Only reentrant algorithms (algorithms.Info.Reentrant) accept it.
	Reenter *Reenter `yaml:"reenter,omitempty" json:"reenter,omitempty"`
	// Each overrides settings per client, by name.
	Each map[string]Client `yaml:"each,omitempty" json:"each,omitempty"`
}

// Reenter is the nested section of clients.reenter: After into the outer
// section's work the client acquires again, holds the inner lease for
// Hold, and releases it; the outer work then goes on to its end.
type Reenter struct {
	After Duration `yaml:"after" json:"after" range:"0..24h"`
	Hold  Duration `yaml:"hold" json:"hold" range:"0..24h"`
}

// ModeOf is the hold mode the named client declares.
func (s *Scenario) ModeOf(client string) string {
	if o := s.Clients.Each[client].Mode; o != nil {
		return *o
	}
	return s.Clients.Mode
}

// Resource describes the protected resource.
type Resource struct {
	Initial int64 `yaml:"initial,omitempty" json:"initial" range:"-1000000000000000..1000000000000000"`
	// TokenCheck is the store's rule for the fencing tokens that come
	// with writes: "none" (tokens are not looked at), ">" (a write's
	// token must be above every token seen) or ">=" (at least the
	// highest seen). Where the tokens come from is params.token_source.
	TokenCheck string `yaml:"token_check,omitempty" json:"token_check,omitempty"`
	// RetiredFencing is resource.fencing, TokenCheck's former spelling,
	// which read as params.fencing (now token_source). A file that uses
	// it is read as token_check with a warning (retired.go); it is never
	// set after Validate. It sits right after TokenCheck so that an old
	// counterexample's digest can be recomputed as it was written.
	RetiredFencing string `yaml:"fencing,omitempty" json:"-" retired:"token_check"`
	// Reliable spares the resource's own traffic (the store's reads and
	// writes) from drop, delay and partition faults: the faults act on
	// the lock's traffic only. Package locktest sets it unless
	// Options.FaultStore asks otherwise: a worker whose write to the
	// store is lost waits for it past the TTL, which no lock can prevent
	// (issue 31, item 4).
	Reliable bool `yaml:"reliable,omitempty" json:"reliable,omitempty"`
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
	Latency Duration `yaml:"latency,omitempty" json:"latency,omitempty" range:"0..1h"`
	Jitter  Duration `yaml:"jitter,omitempty" json:"jitter,omitempty" range:"0..1h"`
}

// Wait is the lock's wait policy: how a client whose try found the lock
// held tries again (algorithms.WaitPolicy).
type Wait struct {
	Attempts int      `yaml:"attempts,omitempty" json:"attempts,omitempty"`
	Delay    Duration `yaml:"delay,omitempty" json:"delay,omitempty" range:"0..1h"`
	Jitter   Duration `yaml:"jitter,omitempty" json:"jitter,omitempty" range:"0..1h"`
	// Backoff is "fixed" (the default: every delay + jitter) or
	// "exponential" (delay, 2×delay, 4×delay, … up to Max, + jitter).
	Backoff string `yaml:"backoff,omitempty" json:"backoff,omitempty"`
	// Max caps the exponential backoff's delay (default 1s).
	Max Duration `yaml:"max,omitempty" json:"max,omitempty" range:"0..1h"`
}

// DefaultBackoffMax is wait.max when wait.backoff is exponential and max
// is left out.
const DefaultBackoffMax = time.Second

// Scenario is one runnable scenario.
type Scenario struct {
	// Counterexample, when set, is the proof of origin of a file written
	// by locklab explore (see counterexample.go); written first.
	Counterexample *Provenance `yaml:"counterexample,omitempty" json:"-"`
	// MadeFor, in a failfile written by package locktest, names the test,
	// fault class and lock the counterexample was found for; a replay
	// into another is refused (locktest/madefor.go). The runner does not
	// read it.
	MadeFor *MadeFor `yaml:"made_for,omitempty" json:"-"`

	ID        string            `yaml:"id" json:"id"`
	Title     string            `yaml:"title" json:"title"`
	Algorithm string            `yaml:"algorithm" json:"algorithm"`
	Key       string            `yaml:"key,omitempty" json:"key,omitempty"`
	TTL       Duration          `yaml:"ttl" json:"ttl" range:"1ms..24h"`
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
	// watch_notifications, sessions_expired, elections,
	// zk_client_messages), as part of what the run must match: a cost claim
	// such as "the queue wakes one waiter per release" is then checked.
	// It lives beside Expect, not in it, so that Expect stays comparable.
	AtMost    map[string]int64 `yaml:"at_most,omitempty" json:"at_most,omitempty"`
	Narrative Narrative        `yaml:"narrative,omitempty" json:"narrative"`
	// Twin names the fixed (or broken) counterpart scenario.
	Twin string `yaml:"twin,omitempty" json:"twin,omitempty"`
	// Course is the scenario's lesson material (lesson.go); the course
	// file only places lessons in sections.
	Course *LessonNotes `yaml:"course,omitempty" json:"-"`
	// Compare lists other algorithms run on the same setup, faults and seed,
	// whose verdicts and metrics are shown beside this one (the herd effect:
	// watch notifications of the simple ZooKeeper lock against the queue).
	Compare []string `yaml:"compare,omitempty" json:"compare,omitempty"`
	// Seed is the default seed.
	Seed uint64 `yaml:"seed,omitempty" json:"seed"`

	// File is where the scenario was read from ("" for the catalogue).
	File string `yaml:"-" json:"-"`
	// Warnings are faults that can never fire, found by Validate.
	Warnings []*FieldError `yaml:"-" json:"-"`
	// renamed are the retired ZooKeeper model's names Validate
	// translated (zookeeper.go), kept to be warned about on every
	// Validate.
	renamed []*FieldError
	// spelled maps a field the file gave in a retired spelling to that
	// spelling ("resource.token_check" → "resource.fencing"; retired.go).
	spelled map[string]string
	root    *yaml.Node
	limits  *Limits
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
	var servers, standbys []string
	if info, err := algorithms.Lookup(s.Algorithm); err == nil {
		b := backendOf(info)
		others = append(others, b.hostNames(s)...)
		if b.Crashable {
			servers = b.hostNames(s)
		}
		if b.Standbys != nil {
			standbys = b.Standbys(s)
		}
	}
	var replicas []string
	for _, n := range s.Nodes {
		if n.Replica != "" {
			replicas = append(replicas, n.Name)
		}
	}
	return faults.Names{Clients: s.ClientNames(), Nodes: s.NodeNames(), Replicas: replicas, Others: others, Servers: servers, Standbys: standbys, NothingToPromote: nothingToPromote(s.Algorithm)}
}

// ApplyDefaults fills in what a file may leave out.
func (s *Scenario) ApplyDefaults() {
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
	if s.Wait.Backoff == algorithms.BackoffExponential && s.Wait.Max == 0 {
		s.Wait.Max = Duration(DefaultBackoffMax)
	}
	if s.Resource.Initial == 0 {
		s.Resource.Initial = 100
	}
	if s.Resource.TokenCheck == "" && s.Resource.RetiredFencing == "" {
		s.Resource.TokenCheck = "none" // or the retired spelling's, in Validate
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
	c.Course = s.Course.clone()
	return &c
}

// params builds the algorithm's parameters.
func (s *Scenario) params() algorithms.Params {
	return algorithms.Params{
		Key:   s.Key,
		TTL:   s.TTL.D(),
		Wait:  algorithms.WaitPolicy{Attempts: s.Wait.Attempts, Delay: s.Wait.Delay.D(), Jitter: s.Wait.Jitter.D(), Backoff: s.Wait.Backoff, Max: s.Wait.Max.D()},
		Extra: s.Params,
	}
}

// clientParams are one client's parameters: the scenario's, with the
// client's hold mode and the semaphore's permits, when declared, for the
// algorithms that read them (algorithms.ParamMode, ParamPermits).
func (s *Scenario) clientParams(p algorithms.Params, client string) algorithms.Params {
	mode := s.ModeOf(client)
	if mode == "" && s.Clients.Permits <= 1 {
		return p
	}
	extra := make(map[string]string, len(p.Extra)+2)
	for k, v := range p.Extra {
		extra[k] = v
	}
	if mode != "" {
		extra[algorithms.ParamMode] = mode
	}
	if s.Clients.Permits > 1 {
		extra[algorithms.ParamPermits] = strconv.Itoa(s.Clients.Permits)
	}
	p.Extra = extra
	return p
}

// checkPrimitiveFields refuses the semaphore and reader-writer settings
// (clients.permits, clients.mode, clients.each.<c>.mode) on an algorithm
// that does not read them: the checker would judge the run as the
// primitive the file names while the algorithm ran as another, so one
// line of a file could turn a violated mutex into an ok semaphore
// (issue 31). A user's own lock (algorithms.Custom) declares its
// primitive in Go and is not checked here.
func (s *Scenario) checkPrimitiveFields(info algorithms.Info, lim Limits, bad func(field, format string, args ...any)) {
	refuse := func(field, param string) {
		readers := algorithms.Readers(param)
		bad(field, "%s does not read %s (it is not a %s), so the run would be judged as another primitive than the one that ran; expected no %s, or an algorithm that reads it: %s",
			s.Algorithm, param, primitiveNoun[param], param, strings.Join(readers, ", "))
	}
	// A value refused for itself (permits: -1, mode: raed) is reported
	// once, by its own check in Validate.
	if s.Clients.Permits > 0 && s.Clients.Permits <= lim.Clients && !info.Reads(algorithms.ParamPermits) {
		refuse("clients.permits", algorithms.ParamPermits)
	}
	if info.Reads(algorithms.ParamMode) {
		return
	}
	if s.Clients.Mode != "" && validMode(s.Clients.Mode) {
		refuse("clients.mode", algorithms.ParamMode)
	}
	for _, name := range sortedKeys(s.Clients.Each) {
		if m := s.Clients.Each[name].Mode; m != nil && *m != "" && validMode(*m) {
			refuse("clients.each."+Printable(name, 40)+".mode", algorithms.ParamMode)
		}
	}
}

// primitiveNoun names the primitive a per-client setting belongs to.
var primitiveNoun = map[string]string{
	algorithms.ParamPermits: "counting semaphore",
	algorithms.ParamMode:    "reader-writer lock",
}

// AsCompared is sc with alg in place of its algorithm, judged as what alg
// is: the semaphore and reader-writer settings alg does not read are
// dropped, so a mutex compared inside a semaphore scenario is judged as a
// mutex (issue 31).
func (s *Scenario) AsCompared(alg string) *Scenario {
	other := s.Clone()
	other.Algorithm = alg
	other.Compare = nil
	info, err := algorithms.Lookup(alg)
	if err != nil {
		return other
	}
	if !info.Reads(algorithms.ParamPermits) {
		other.Clients.Permits = 0
	}
	if !info.Reads(algorithms.ParamMode) {
		other.Clients.Mode = ""
		for name, c := range other.Clients.Each {
			c.Mode = nil
			other.Clients.Each[name] = c
		}
	}
	return other
}
