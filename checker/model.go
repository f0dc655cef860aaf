package checker

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The mutex model, as Jepsen checks locks: the state is the holder (or -1
// for free); acquire is legal only when free, release only by the holder. A
// history of holding intervals is linearizable exactly when no two of them
// overlap.

type mutexInput struct {
	Acquire bool
	Client  int
	Name    string
	Why     string
}

var mutexModel = porcupine.Model{
	Init: func() any { return -1 },
	Step: func(state, input, output any) (bool, any) {
		in := input.(mutexInput)
		holder := state.(int)
		if in.Acquire {
			if holder != -1 {
				return false, holder
			}
			return true, in.Client
		}
		if holder != in.Client {
			return false, holder
		}
		return true, -1
	},
	DescribeOperation: func(input, output any) string {
		in := input.(mutexInput)
		if in.Acquire {
			return fmt.Sprintf("%s acquire", in.Name)
		}
		return fmt.Sprintf("%s stops holding (%s)", in.Name, in.Why)
	},
	DescribeState: func(state any) string {
		if state.(int) == -1 {
			return "free"
		}
		return fmt.Sprintf("held by client #%d", state.(int))
	},
}

// mutexOperations turns holding intervals into porcupine operations: an
// acquire spanning [acquire call, acquire return] and an instantaneous
// release at the end of the interval. Client ids follow sorted client names
// so visualizations are stable.
func mutexOperations(iv []Interval) []porcupine.Operation {
	names := map[string]int{}
	var list []string
	for _, i := range iv {
		if _, ok := names[i.Client]; !ok {
			names[i.Client] = 0
			list = append(list, i.Client)
		}
	}
	sort.Strings(list)
	for k, n := range list {
		names[n] = k
	}
	var ops []porcupine.Operation
	for _, i := range iv {
		if i.End <= i.Start {
			continue // granted but already over: the client never believed it held
		}
		id := names[i.Client]
		ops = append(ops,
			porcupine.Operation{ClientId: id, Input: mutexInput{Acquire: true, Client: id, Name: i.Client}, Call: int64(i.AcquireCall), Return: int64(i.Start)},
			porcupine.Operation{ClientId: id, Input: mutexInput{Client: id, Name: i.Client, Why: i.EndReason}, Call: int64(i.End), Return: int64(i.End)},
		)
	}
	return ops
}
