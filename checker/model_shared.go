package checker

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// The porcupine models of the primitives with more than one holder at
// once, over the same hold instants as mutexModel (see model.go: ends at
// 2t, beginnings at 2t+1, so distinct instants are totally ordered).
//
// Their states count holds rather than naming them: every end in the
// operations is its own hold's, made from the same interval, so a count
// loses nothing, and equal counts let porcupine's cache merge the orders of
// simultaneous beginnings.
//
// A busy semaphore may never be free (three permits, ten clients: someone
// always holds), so cutting only at quiet instants, as the mutex does,
// would leave one partition of the whole run, whose cost grows with its
// square. busySegments cuts at any instant instead and hands each
// partition the occupancy it starts with: the holds begun before the cut
// and not yet ended, counted from the operations themselves.

// occupancy is who holds: readers' holds and the others (writers', or a
// semaphore's permits). Started is false only before a partition's first
// operation, when the state is still to be taken from its Carry.
type occupancy struct {
	Started          bool
	Readers, Writers int
}

// sharedInput is a hold instant inside one partition: Opens marks the
// instants at the partition's first time, which carry its starting
// occupancy.
type sharedInput struct {
	mutexInput
	Opens bool
	Carry occupancy
}

// enter starts a partition's state from its carried occupancy and applies
// in's change to it; ok is false for an end with no hold under way.
func enter(state any, in sharedInput) (occupancy, bool) {
	s := state.(occupancy)
	if !s.Started {
		if !in.Opens {
			return s, false
		}
		s = in.Carry
		s.Started = true
	}
	n := &s.Writers
	if in.Read {
		n = &s.Readers
	}
	if in.Begin {
		*n++
	} else {
		*n--
	}
	return s, *n >= 0
}

// semaphoreModel allows at most permits holds at any instant.
func semaphoreModel(permits int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return occupancy{} },
		Step: func(state, input, _ any) (bool, any) {
			s, ok := enter(state, input.(sharedInput))
			return ok && s.Readers+s.Writers <= permits, s
		},
		Partition:         busySegments,
		DescribeOperation: describeHoldInstant,
		DescribeState: func(state any) string {
			s := state.(occupancy)
			return fmt.Sprintf("%d of %d permits in use", s.Readers+s.Writers, permits)
		},
	}
}

// rwModel lets a writer hold only alone, and readers together (Redisson's
// RReadWriteLock, Curator's InterProcessReadWriteLock: shared reads,
// exclusive writes).
var rwModel = porcupine.Model{
	Init: func() any { return occupancy{} },
	Step: func(state, input, _ any) (bool, any) {
		s, ok := enter(state, input.(sharedInput))
		return ok && (s.Writers == 0 || s.Writers == 1 && s.Readers == 0), s
	},
	Partition:         busySegments,
	DescribeOperation: describeHoldInstant,
	DescribeState: func(state any) string {
		s := state.(occupancy)
		return fmt.Sprintf("%d readers, %d writers", s.Readers, s.Writers)
	},
}

// busySegments cuts the hold instants into partitions of about segmentOps
// operations, at instant boundaries, each carrying the occupancy at its
// start.
func busySegments(history []porcupine.Operation) [][]porcupine.Operation {
	ops := slices.Clone(history)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var out [][]porcupine.Operation
	now := occupancy{Started: true} // after every operation so far
	from, carry := 0, occupancy{}
	for i, op := range ops {
		in := op.Input.(mutexInput)
		ops[i].Input = sharedInput{mutexInput: in, Opens: op.Call == ops[from].Call, Carry: carry}
		now, _ = enter(now, sharedInput{mutexInput: in})
		boundary := i+1 == len(ops) || ops[i+1].Call > op.Call
		if boundary && (i+1-from >= segmentOps || i+1 == len(ops)) {
			out = append(out, ops[from:i+1])
			from, carry = i+1, occupancy{Readers: now.Readers, Writers: now.Writers}
		}
	}
	return out
}

func describeHoldInstant(input, _ any) string {
	var in mutexInput
	switch x := input.(type) {
	case sharedInput:
		in = x.mutexInput
	case mutexInput:
		in = x
	}
	who := in.Name
	if in.Read {
		who += " (reader)"
	}
	if in.Begin {
		return fmt.Sprintf("%s holds (from %s)", who, msText(in.At))
	}
	return fmt.Sprintf("%s stops (%s, %s)", who, in.Why, msText(in.At))
}
