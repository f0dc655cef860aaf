package checker

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The mutex model, as Jepsen checks locks, over holds rather than clients:
// the state is the hold that has the lock (or -1 when free); a hold may
// begin only when the lock is free and end only if it is the one that has
// it. Keying the state by hold, not by client, makes two overlapping holds
// of one client illegal too.
//
// Operations are instants (call == return): the moment a hold begins and
// the moment it ends. Holds are half-open, [Start, End), so at one instant
// every ending comes before every beginning: an end at true time t is
// placed at porcupine time 2t, a beginning at 2t+1. Distinct instants are
// totally ordered, so porcupine's search never branches except over holds
// that begin at the same instant (at most one of them can succeed, and the
// search fails as soon as a second one is tried): linear, with no timeout.

type mutexInput struct {
	Begin  bool
	Hold   int // index of the interval in the history
	Client int // index of the client (porcupine's row)
	Name   string
	At     int64 // true time in ns
	Why    string
	// Read marks a reader's hold of a reader-writer lock (see rwModel);
	// the mutex and semaphore models ignore it.
	Read bool
}

var mutexModel = porcupine.Model{
	Init: func() any { return -1 },
	Step: func(state, input, output any) (bool, any) {
		in := input.(mutexInput)
		holder := state.(int)
		if in.Begin {
			if holder != -1 {
				return false, holder
			}
			return true, in.Hold
		}
		if holder != in.Hold {
			return false, holder
		}
		return true, -1
	},
	Partition: quietSegments,
	DescribeOperation: func(input, output any) string {
		in := input.(mutexInput)
		if in.Begin {
			return fmt.Sprintf("%s holds (from %s)", in.Name, msText(in.At))
		}
		return fmt.Sprintf("%s stops (%s, %s)", in.Name, in.Why, msText(in.At))
	},
	DescribeState: func(state any) string {
		if state.(int) == -1 {
			return "free"
		}
		return fmt.Sprintf("held (hold #%d)", state.(int))
	},
}

// msText renders a true time in milliseconds from the start of the run.
func msText(ns int64) string {
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}

// segmentOps is how many operations quietSegments gathers into one
// porcupine partition before it cuts at the next quiet instant. porcupine
// keeps a bitset of the partition's operations per cached state, so a
// partition of n operations costs O(n²) bits: cutting keeps a long serial
// history linear in time and memory (issue 10 item 7).
var segmentOps = 128 // a variable so that tests can cut small histories too

// quietSegments splits a history of hold instants into independent
// partitions at instants where nobody holds. Each partition starts with
// the lock free, which is the model's initial state, so checking the
// partitions one by one is exactly checking the whole history.
func quietSegments(history []porcupine.Operation) [][]porcupine.Operation {
	ops := slices.Clone(history)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var out [][]porcupine.Operation
	open, from := 0, 0
	for i, op := range ops {
		if op.Input.(mutexInput).Begin {
			open++
		} else {
			open--
		}
		quiet := open == 0 && (i+1 == len(ops) || ops[i+1].Call > op.Call)
		if quiet && i+1-from >= segmentOps || i+1 == len(ops) {
			out = append(out, ops[from:i+1])
			from = i + 1
		}
	}
	return out
}

// clientIndex numbers the clients of a history in sorted name order, so
// porcupine's rows are stable.
func clientIndex(iv []Interval) ([]string, map[string]int) {
	seen := map[string]int{}
	var names []string
	for _, i := range iv {
		if _, ok := seen[i.Client]; !ok {
			seen[i.Client] = 0
			names = append(names, i.Client)
		}
	}
	sort.Strings(names)
	for k, n := range names {
		seen[n] = k
	}
	return names, seen
}

// mutexOperations turns holds into porcupine operations: one instant where
// each hold begins and one where it ends. An empty hold (End <= Start) is
// no hold at all: the client stopped acting the moment it began.
func mutexOperations(iv []Interval) []porcupine.Operation {
	_, ids := clientIndex(iv)
	ops := make([]porcupine.Operation, 0, 2*len(iv))
	for k, i := range iv {
		if i.End <= i.Start {
			continue
		}
		id := ids[i.Client]
		begin, end := 2*int64(i.Start)+1, 2*int64(i.End)
		read := i.Shared()
		ops = append(ops,
			porcupine.Operation{ClientId: id, Input: mutexInput{Begin: true, Hold: k, Client: id, Name: i.Client, At: int64(i.Start), Read: read}, Call: begin, Return: begin},
			porcupine.Operation{ClientId: id, Input: mutexInput{Hold: k, Client: id, Name: i.Client, At: int64(i.End), Why: i.EndReason, Read: read}, Call: end, Return: end},
		)
	}
	return ops
}
