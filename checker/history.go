package checker

import (
	"time"
)

// Interval is one hold, in true time: from the return of a successful
// acquire (Start) until the client stops acting as holder (End), see the
// package documentation. Holds are half-open: [Start, End).
type Interval struct {
	Client      string        `json:"client"`
	AcquireCall time.Duration `json:"acquire_call_ns"`
	Start       time.Duration `json:"start_ns"`
	End         time.Duration `json:"end_ns"`
	// EndReason is "release", "crash", "lost" (the client learned it lost
	// the lock), "validity" (the client checked its lease, found it run
	// out and stopped acting) or "end of run".
	EndReason string `json:"end_reason"`
	// LockValue is the value the lease wrote into the lock (its owner's
	// name for it) and FencingToken the lease's fencing token (0: none).
	// Their JSON names, token and fence, are kept from before the rename
	// (issue 33), so traces and --json output read as they did.
	LockValue    string `json:"token,omitempty"`
	FencingToken int64  `json:"fence,omitempty"`
	// Mode is "read" for a shared hold of a reader-writer lock and "write"
	// (or empty) for an exclusive one; see ModeRead.
	Mode string `json:"mode,omitempty"`
}

// Hold modes of a reader-writer lock. Any other mode, the empty one
// included, is exclusive: a mutex hold is a writer's hold.
const (
	ModeRead  = "read"
	ModeWrite = "write"
)

// Shared reports whether the hold is a reader's, which may overlap other
// readers' holds.
func (i Interval) Shared() bool { return i.Mode == ModeRead }

// Want is a stretch of true time during which a client wanted the lock: from
// its first acquire call of a cycle to the acquisition (or its crash, or the
// end of the run).
type Want struct {
	Client  string        `json:"client"`
	From    time.Duration `json:"from_ns"`
	To      time.Duration `json:"to_ns"`
	Outcome string        `json:"outcome"` // "acquired", "crash", "end of run", "gave up"
	// Mode is the hold wanted, as Interval.Mode: "read", "write" or empty.
	Mode string `json:"mode,omitempty"`
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
	Based int64 `json:"based,omitempty"`
	// FencingToken is the fencing token the access came with (0: none).
	FencingToken int64 `json:"fence,omitempty"`
	// Highest is the highest fencing token the store had seen when it
	// compared FencingToken (0: none yet, or no fencing): the store's side of the
	// comparison, so a drawing of it needs no re-reading of Reason.
	Highest  int64  `json:"highest,omitempty"`
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
	// Fenced says the store compared fencing tokens (resource.token_check ">"
	// or ">="). Only then are tokens part of the resource's rule: on a
	// store that ignores them, a lease's token (a ZooKeeper node's
	// sequence number, a pg fence row) changes nothing the store does, so
	// it must change nothing in the verdict either (issue 31 item 7).
	Fenced bool `json:"fenced,omitempty"`
}
