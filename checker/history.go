// Package checker turns the history of a run into a verdict and a witness.
//
// Three properties are checked (design.md, "What a violation is"):
//
//   - mutual exclusion: no two clients believe they hold the lock at the same
//     true time. A client believes it holds from the return of a successful
//     acquire until it stops acting as holder: it calls release, its lease's
//     validity deadline passes on its own clock, or it crashes. Checked with a
//     porcupine mutex model over those intervals, as Jepsen does for locks;
//     the witness is the first overlapping pair.
//   - resource safety: the protected resource's accepted writes form a serial
//     chain of read-modify-write steps (no lost update), and, with fencing, no
//     two clients' writes are accepted under the same token.
//   - liveness: the lock is never unavailable for longer than a bound while
//     some live client wants it and no client holds it.
package checker

import (
	"time"
)

// Interval is one client-believed holding interval, in true time.
type Interval struct {
	Client      string        `json:"client"`
	AcquireCall time.Duration `json:"acquire_call_ns"`
	Start       time.Duration `json:"start_ns"`
	End         time.Duration `json:"end_ns"`
	// EndReason is "release", "validity", "crash" or "end of run".
	EndReason string `json:"end_reason"`
	Token     string `json:"token,omitempty"`
	Fence     int64  `json:"fence,omitempty"`
}

// Want is a stretch of true time during which a client wanted the lock: from
// its first acquire call of a cycle to the acquisition (or its crash, or the
// end of the run).
type Want struct {
	Client  string        `json:"client"`
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Outcome string        `json:"outcome"` // "acquired", "crash", "end of run", "gave up"
}

// Access is one operation executed by the protected resource, in the order
// the resource executed them.
type Access struct {
	Seq    int           `json:"seq"`
	At     time.Duration `json:"at_ns"`
	Client string        `json:"client"`
	Kind   string        `json:"kind"` // "read" or "write"
	// Value is the value read, or the value written.
	Value int64 `json:"value"`
	// Based is, for a write, the value the client had read before computing it.
	Based    int64  `json:"based,omitempty"`
	Fence    int64  `json:"fence,omitempty"`
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// History is everything the checker needs from a run.
type History struct {
	Intervals []Interval `json:"intervals"`
	Wants     []Want     `json:"wants"`
	Accesses  []Access   `json:"accesses"`
	// Initial is the resource's value at the start of the run.
	Initial int64 `json:"initial"`
	// End is the true time the run ended.
	End time.Duration `json:"end_ns"`
}
