package reports

import (
	"slices"
	"time"

	"github.com/locklab/locklab/sim/event"
)

// The replication stream carries a master's writes to each replica in the
// order the master ran them (Redis's replication page: the master sends a
// stream of commands). An effect the replica applies is matched to the
// master's write it came from, for the lag drawn: the next write of that
// master the replica has not had, preferring one that is the same command
// or names the same token (a script's effect arrives rewritten, "DEL lock"
// for a compare-and-delete); a full sync skips the replica past everything
// its master had written.

type masterWrite struct {
	at      time.Duration
	id      int
	command string // its summary, compared whole as an identifier only
	args    []string
}

type replStream struct {
	writes map[string][]masterWrite // master → its writes, in order
	cursor map[string]int           // master|replica → the next write it has not had
}

func newReplStream() *replStream {
	return &replStream{writes: map[string][]masterWrite{}, cursor: map[string]int{}}
}

// wrote records event i, a command that changed node's data.
func (s *replStream) wrote(node string, i int, e *event.Event) {
	s.writes[node] = append(s.writes[node], masterWrite{at: e.At, id: i, command: e.Command, args: words(e)})
}

// fullSync: the replica took its master's whole dataset.
func (s *replStream) fullSync(master, replica string) {
	s.cursor[master+"|"+replica] = len(s.writes[master])
}

// match finds the master's write an effect e (applied, lost or dropped on
// its way to replica) came from: its time and event index.
func (s *replStream) match(master, replica string, e *event.Event) (time.Duration, int, bool) {
	ws, k := s.writes[master], master+"|"+replica
	c := s.cursor[k]
	eff := words(e)
	for j := c; j < len(ws) && ws[j].at <= e.At; j++ {
		if ws[j].command == e.Command || sharesToken(ws[j].args, eff) {
			s.cursor[k] = j + 1
			return ws[j].at, ws[j].id, true
		}
	}
	if c < len(ws) && ws[c].at <= e.At {
		s.cursor[k] = c + 1
		return ws[c].at, ws[c].id, true
	}
	return 0, -1, false
}

func sharesToken(a, b []string) bool {
	for _, w := range a {
		if looksLikeToken(w) && slices.Contains(b, w) {
			return true
		}
	}
	return false
}
