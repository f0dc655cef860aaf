package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/sim/event"
)

// A server row's subtitle says what the host is in this run, from its role
// and from what the events show it doing: a database host that dials
// servers on behalf of the clients is a connection pool (the application's
// shared pool) or, when the clients dial it, a pooler in front of those
// servers (PgBouncer); a replica or standby that was promoted says so, with
// when. The host list's role alone ("postgres") would call PgBouncer a
// database node and a promoted replica a replica for the whole run.

// hostSubtitle is h's row subtitle (short enough for the name column), its
// tooltip (the whole history) and the ids of the events it rests on.
func hostSubtitle(h runner.Host, events []event.Event) (sub, title string, ids []int) {
	var dialed []string
	dialedBy := false
	var changes []string
	for i, e := range events {
		switch {
		case e.Kind == event.DBConnOpened && e.Client == h.Name:
			if !slices.Contains(dialed, e.Node) {
				dialed = append(dialed, e.Node)
				ids = append(ids, i)
			}
		case e.Kind == event.DBConnOpened && e.Node == h.Name && !dialedBy:
			dialedBy = true
			ids = append(ids, i)
		case (e.Kind == event.Promoted || e.Kind == event.DBPromoted) && e.Node == h.Name:
			changes = append(changes, "promoted at "+checker.Sec(e.At))
			ids = append(ids, i)
		case e.Kind == event.MasterRejoined && e.Node == h.Name:
			changes = append(changes, fmt.Sprintf("replica of %s at %s", e.To, checker.Sec(e.At)))
			ids = append(ids, i)
		}
	}
	sub = h.Role + " node"
	switch {
	case len(dialed) > 0 && dialedBy:
		sub = "pooler in front of " + strings.Join(dialed, ", ")
	case len(dialed) > 0:
		sub = "shared connection pool to " + strings.Join(dialed, ", ")
	}
	title = h.Name + ": " + sub
	if len(changes) > 0 {
		title += ", then " + strings.Join(changes, ", then ")
		sub = changes[len(changes)-1]
	}
	return sub, title, ids
}
