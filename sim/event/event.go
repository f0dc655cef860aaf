// Package event is the run's record: every fact a simulation produces is an
// Event value with a kind and typed fields. The text trace, its digest, the
// report lanes and the narratives are derived from events; the text line of
// an event is produced in one place only, Render, so no reader ever has to
// parse English back into facts (docs/design.md, "Events are the record").
//
// An event's fields are the facts of its kind and nothing else: a command
// sent names the node and the command, a replicated effect names the master,
// the replica and the stream offset, a hold names the token and its
// validity on the client's clock. Fields a kind does not use stay zero and
// are left out of the JSON Lines form.
package event

import "time"

// Kind names what happened. The names are stable: they are the "kind" key
// of `locklab run --events` and what readers switch on.
type Kind string

// Event is one fact of a run, stamped with true (simulated) time.
type Event struct {
	At    time.Duration `json:"at_ns"`
	Actor string        `json:"actor"`
	Kind  Kind          `json:"kind"`

	// Node is the server the fact is about: the node a command ran on, the
	// node whose key expired, the replica that applied an effect, the
	// server that crashed.
	Node string `json:"node,omitempty"`
	// From and To are the two ends of a message, a replication link, a
	// promotion (From is the old master) or a network link.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Client is the client host a command or message belongs to.
	Client string `json:"client,omitempty"`
	// Dir is a message's direction ("request", "reply").
	Dir string `json:"dir,omitempty"`
	// Conn names a ZooKeeper connection: client host, dial number, server.
	Conn string `json:"conn,omitempty"`
	// Command is a command or message as summarized for people (scripts by
	// their role, long values cut); Args is the command itself when the
	// sender had it, so readers take the key and value from data.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	Reply   string   `json:"reply,omitempty"`
	Op      string   `json:"op,omitempty"`
	Key     string   `json:"key,omitempty"`
	// Clock is the node's own clock reading at the event (key expiry is
	// decided on it).
	Clock time.Duration `json:"clock_ns,omitempty"`
	// Resource, LockValue, FencingToken and Validity describe a hold: what
	// the client holds, the lock value that proves it, the fencing token
	// the store issued, and the end of the lease on the client's clock
	// (since sim.Epoch). The JSON names token and fence, and the rendered
	// text, are kept from before the rename (issue 33): the text is what
	// the trace digest hashes.
	Resource     string        `json:"resource,omitempty"`
	LockValue    string        `json:"token,omitempty"`
	FencingToken int64         `json:"fence,omitempty"`
	Validity     time.Duration `json:"validity_ns,omitempty"`
	// Delay is how long a message was held back, or how long a session
	// went unheard; Timeout a session's negotiated timeout.
	Delay   time.Duration `json:"delay_ns,omitempty"`
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	// Offset is a replication stream offset; Keys a node's key count;
	// Count a number of writes replayed, transactions logged or servers in
	// an election group; Total the ensemble's size; Epoch a ZooKeeper epoch.
	Offset  int64  `json:"offset,omitempty"`
	Keys    int    `json:"keys,omitempty"`
	Count   int    `json:"count,omitempty"`
	Total   int    `json:"total,omitempty"`
	Epoch   int64  `json:"epoch,omitempty"`
	Session string `json:"session,omitempty"`
	// Ephemeral marks a ZooKeeper create (or its reply) of an ephemeral
	// node: a lock node, which its session's end deletes.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// Fault is a fault as the scenario spells it; Persistence a node's
	// persistence mode at restart.
	Fault       string `json:"fault,omitempty"`
	Persistence string `json:"persistence,omitempty"`
	// Reason says why: a drop's filter, a lost message's cause, an error.
	Reason string `json:"reason,omitempty"`
	// Note is the whole text of an untyped note (World.Tracef).
	Note string `json:"note,omitempty"`
}
