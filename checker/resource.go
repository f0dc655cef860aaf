package checker

import "fmt"

// Kinds of resource witnesses.
const (
	LostUpdate     = "lost update"     // others wrote between the writer's read and its write
	ABA            = "ABA"             // they did, and the value came back to what was read
	StaleBase      = "stale base"      // based on a value the resource did not hold, no write explains it
	NotReadMinus1  = "not read-1"      // the written value is not the read value minus one
	DuplicateToken = "duplicate token" // two clients' writes accepted under one token
	StaleToken     = "stale token"     // accepted with a token lower than one already accepted
)

// ResourceWitness explains a resource violation.
type ResourceWitness struct {
	// Kind is one of the kinds above.
	Kind string `json:"kind"`
	// Write is the offending accepted write. Overwritten is the accepted
	// write whose effect it silently undid (lost update, ABA: the last one
	// between its read and it), that carried the same token (duplicate
	// token) or the higher one (stale token, where it may be a read); for
	// the other kinds it is the access the write was judged against (the
	// writer's read, or the last write), and the write itself when there is
	// none, so that it always points at a real place in the history.
	Write       Access `json:"write"`
	Overwritten Access `json:"overwritten"`
	// Read is the writer's own last read before the write, when it made one.
	Read *Access `json:"read,omitempty"`
	// Held is the value the resource held when the write arrived.
	Held     int64 `json:"held"`
	Expected int64 `json:"expected_final"`
	Final    int64 `json:"final"`
	// Later lists, in words, further accepted writes that fail a check
	// (at most maxLater). Under the read-1 rule an ABA can only follow
	// another violation, so it shows here rather than as the witness.
	Later []string `json:"later,omitempty"`
	// Hold is, for a write under a read lock, the reader's hold it was
	// made under.
	Hold *Interval `json:"hold,omitempty"`
}

const maxLater = 10

func (r *ResourceWitness) String() string {
	w := r.Write
	tail := ""
	if r.Expected != 0 || r.Final != 0 {
		tail = fmt.Sprintf(" (final value %d, a serial order gives %d)", r.Final, r.Expected)
	}
	switch r.Kind {
	case WriteUnderRead:
		return r.writeUnderReadString()
	case DuplicateToken:
		return fmt.Sprintf("duplicate token: %s's write at %s and %s's write at %s were both accepted with fencing token %d",
			r.Overwritten.Client, Sec(r.Overwritten.At), w.Client, Sec(w.At), w.FencingToken) + tail
	case StaleToken:
		return fmt.Sprintf("stale token: %s's write at %s was accepted with fencing token %d after %s's %s at %s with token %d",
			w.Client, Sec(w.At), w.FencingToken, r.Overwritten.Client, r.Overwritten.Kind, Sec(r.Overwritten.At), r.Overwritten.FencingToken) + tail
	case NotReadMinus1:
		return fmt.Sprintf("not read-1: %s wrote %d at %s after reading %d; one sale takes exactly one item",
			w.Client, w.Value, Sec(w.At), r.base()) + tail
	case StaleBase:
		return fmt.Sprintf("stale base: %s wrote %d at %s computed from %d, but the resource held %d and no write had left %d",
			w.Client, w.Value, Sec(w.At), r.base(), r.Held, r.base()) + tail
	case ABA:
		return fmt.Sprintf("ABA: %s wrote %d at %s based on its read of %d at %s; the value was %d again, but %s's write at %s came in between",
			w.Client, w.Value, Sec(w.At), r.base(), Sec(r.Read.At), r.Held, r.Overwritten.Client, Sec(r.Overwritten.At)) + tail
	default:
		return fmt.Sprintf("lost update: %s wrote %d at %s based on a read of %d, overwriting %s's write of %d at %s",
			w.Client, w.Value, Sec(w.At), r.base(), r.Overwritten.Client, r.Overwritten.Value, Sec(r.Overwritten.At)) + tail
	}
}

// checkResource replays the resource's log in the order it executed it.
// Every accepted write is checked, the first one included (against the
// initial value), and the first failing check is the witness.
func checkResource(h History, m *Metrics) (Status, *ResourceWitness) {
	cur := h.Initial
	var lastWrite *Access            // the last accepted write
	var highest *Access              // the accepted access with the highest token
	written := 0                     // accepted writes so far
	lastRead := map[string]int{}     // client -> index of its last accepted read
	writesAtRead := map[string]int{} // client -> accepted writes when it read
	byFence := map[int64]int{}       // token -> index of the first accepted write
	var witness *ResourceWitness
	for i := range h.Accesses {
		a := h.Accesses[i]
		if !a.Accepted {
			if a.Kind == "write" {
				m.RejectedWrites++
			}
			continue
		}
		if a.Kind != "write" {
			lastRead[a.Client] = i
			writesAtRead[a.Client] = written
			if a.FencingToken != 0 && (highest == nil || a.FencingToken > highest.FencingToken) {
				highest = &h.Accesses[i]
			}
			continue
		}
		written++
		m.Writes++
		if wit := judgeWrite(h, i, cur, lastWrite, highest, byFence, lastRead, writesAtRead, written-1); wit != nil {
			switch {
			case witness == nil:
				witness = wit
			case len(witness.Later) < maxLater:
				witness.Later = append(witness.Later, wit.String())
			}
		}
		if a.FencingToken != 0 {
			if _, ok := byFence[a.FencingToken]; !ok {
				byFence[a.FencingToken] = i
			}
			if highest == nil || a.FencingToken > highest.FencingToken {
				highest = &h.Accesses[i]
			}
		}
		cur = a.Value
		lastWrite = &h.Accesses[i]
	}
	m.FinalValue = cur
	if witness == nil {
		return OK, nil
	}
	// Every accepted write sells one item, so a serial order ends at
	// Initial - writes.
	witness.Final = cur
	witness.Expected = h.Initial - int64(written)
	return Violated, witness
}

// judgeWrite checks the accepted write h.Accesses[i], arriving when the
// resource held cur after `before` accepted writes.
func judgeWrite(h History, i int, cur int64, lastWrite, highest *Access, byFence map[int64]int,
	lastRead, writesAtRead map[string]int, before int) *ResourceWitness {
	a := h.Accesses[i]
	wit := &ResourceWitness{Write: a, Overwritten: a, Held: cur}
	if r, ok := lastRead[a.Client]; ok {
		read := h.Accesses[r]
		wit.Read = &read
	}
	// The token rules judge a store that compares tokens, whatever the
	// backend: on an unfenced store a write is judged by what it did to
	// the value alone, as a tokenless Redis lease's is, so a serial
	// history is ok on every backend (docs/violations.md).
	if h.Fenced && a.FencingToken != 0 {
		if j, ok := byFence[a.FencingToken]; ok && h.Accesses[j].Client != a.Client {
			wit.Kind, wit.Overwritten = DuplicateToken, h.Accesses[j]
			return wit
		}
		if highest != nil && a.FencingToken < highest.FencingToken {
			wit.Kind, wit.Overwritten = StaleToken, *highest
			return wit
		}
	}
	// The base of a write is the value its client actually read; the
	// Based the client reports is only its claim (a client without a read
	// is judged on the claim).
	base := wit.base()
	if a.Value != base-1 {
		wit.Kind = NotReadMinus1
		if wit.Read != nil {
			wit.Overwritten = *wit.Read
		}
		return wit
	}
	intervening := wit.Read != nil && writesAtRead[a.Client] < before
	switch {
	case base != cur && lastWrite != nil:
		wit.Kind, wit.Overwritten = LostUpdate, *lastWrite
		return wit
	case base != cur:
		wit.Kind = StaleBase
		if wit.Read != nil {
			wit.Overwritten = *wit.Read
		}
		return wit
	case intervening:
		wit.Kind, wit.Overwritten = ABA, *lastWrite
		return wit
	}
	return nil
}

// base is the value the write was computed from: the writer's last read,
// else the base it reported.
func (r *ResourceWitness) base() int64 {
	if r.Read != nil {
		return r.Read.Value
	}
	return r.Write.Based
}
