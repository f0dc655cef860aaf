package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The porcupine models of the primitives with more than one holder at
// once, over the same hold instants as mutexModel (see model.go: ends at
// 2t, beginnings at 2t+1, partitioned at quiet instants, where every model
// is back in its initial state).
//
// Their states count holds rather than naming them: every end in the
// operations is its own hold's, made from the same interval, so a count
// loses nothing, and equal counts let porcupine's cache merge the orders of
// simultaneous beginnings.

// semaphoreModel allows at most permits holds at any instant.
func semaphoreModel(permits int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return 0 },
		Step: func(state, input, output any) (bool, any) {
			n := state.(int)
			if input.(mutexInput).Begin {
				if n >= permits {
					return false, n
				}
				return true, n + 1
			}
			if n == 0 {
				return false, n
			}
			return true, n - 1
		},
		Partition:         quietSegments,
		DescribeOperation: describeHoldInstant,
		DescribeState: func(state any) string {
			return fmt.Sprintf("%d of %d permits in use", state.(int), permits)
		},
	}
}

// rwState is a reader-writer lock's occupancy.
type rwState struct{ Readers, Writers int }

// rwModel lets a writer begin only when nobody holds, and a reader only
// when no writer does (Redisson's RReadWriteLock, Curator's
// InterProcessReadWriteLock: shared reads, exclusive writes).
var rwModel = porcupine.Model{
	Init: func() any { return rwState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(rwState), input.(mutexInput)
		switch {
		case in.Begin && in.Read:
			if s.Writers > 0 {
				return false, s
			}
			s.Readers++
		case in.Begin:
			if s.Writers > 0 || s.Readers > 0 {
				return false, s
			}
			s.Writers++
		case in.Read:
			if s.Readers == 0 {
				return false, s
			}
			s.Readers--
		default:
			if s.Writers == 0 {
				return false, s
			}
			s.Writers--
		}
		return true, s
	},
	Partition:         quietSegments,
	DescribeOperation: describeHoldInstant,
	DescribeState: func(state any) string {
		s := state.(rwState)
		return fmt.Sprintf("%d readers, %d writers", s.Readers, s.Writers)
	},
}

func describeHoldInstant(input, output any) string {
	in := input.(mutexInput)
	who := in.Name
	if in.Read {
		who += " (reader)"
	}
	if in.Begin {
		return fmt.Sprintf("%s holds (from %s)", who, msText(in.At))
	}
	return fmt.Sprintf("%s stops (%s, %s)", who, in.Why, msText(in.At))
}
