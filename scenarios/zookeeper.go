package scenarios

import (
	"fmt"
	"slices"

	"github.com/locklab/locklab/algorithms"
)

// The single-server ZooKeeper model (sim/zk's server and client, the
// zk-simple, zk-queue and zk-queue-naive recipes written for it) is
// retired (issue 21): the house has one ZooKeeper, the simulated ensemble
// the real go-zookeeper client talks to. A scenario file written for the
// old model keeps working: its algorithm names the go-zookeeper recipe
// that replaced it, on a one-server ensemble (zk1), its settings are
// translated where the replacement has one, and a setting it has no
// equivalent for is refused with a message naming what to write instead.
// Each translation is a warning, so the file's author learns the new
// names.

// retiredZK maps each retired algorithm to its replacement.
var retiredZK = map[string]string{
	"zk-simple":      "gozk-simple",
	"zk-queue":       "gozk-queue",
	"zk-queue-naive": "gozk-queue-naive",
}

// retiredZKServer is the host name of the old model's one server; the
// one-server ensemble names it zk1.
const retiredZKServer = "zk"

// RetiredAlgorithm says which algorithm replaced a retired one
// ("zk-queue" → "gozk-queue"), for commands that take an algorithm's name
// on their command line.
func RetiredAlgorithm(name string) (replacement string, ok bool) {
	replacement, ok = retiredZK[name]
	return replacement, ok
}

// retireZK rewrites what the scenario says in the retired model's words
// into the ensemble's, recording each change in s.renamed (warnings), and
// reports the settings that have no equivalent. It changes nothing in a
// scenario that names no retired algorithm, and nothing the second time.
// The params and the server's name are translated when the scenario's own
// algorithm is a retired one (they are its settings); a retired name in
// compare is only renamed.
func (s *Scenario) retireZK() Errors {
	for i, a := range s.Compare {
		if r, ok := retiredZK[a]; ok {
			field := fmt.Sprintf("compare[%d]", i)
			s.renamed = append(s.renamed, s.fieldErr(field, "%s was the retired single-server ZooKeeper model; comparing with %s, the same recipe on the real go-zookeeper client", a, r))
			s.Compare[i] = r
		}
	}
	r, ok := retiredZK[s.Algorithm]
	if !ok {
		return nil
	}
	// The warning names the ensemble the run gets: one server unless the
	// file sets params.zk_servers (a zk_servers: 3 ran three servers under
	// a warning that said zk1 alone; issue 32).
	ensemble := "on a one-server ensemble (zk1)"
	if n, ok := s.Params["zk_servers"]; ok && n != "1" {
		ensemble = fmt.Sprintf("on the %s-server ensemble params.zk_servers asks for (zk1..zk%s)", Printable(n, 10), Printable(n, 10))
	}
	s.renamed = append(s.renamed, s.fieldErr("algorithm", "%s was the retired single-server ZooKeeper model; running %s, the same recipe on the real go-zookeeper client, %s", s.Algorithm, r, ensemble))
	s.Algorithm = r
	var errs Errors
	if s.Params == nil {
		s.Params = map[string]string{}
	}
	if _, ok := s.Params["zk_servers"]; !ok {
		s.Params["zk_servers"] = "1"
	}
	if v, ok := s.Params["stop_on_suspended"]; ok {
		if _, both := s.Params["stop_on_disconnect"]; both {
			errs = append(errs, s.fieldErr("params.stop_on_suspended", "is stop_on_disconnect on the go-zookeeper recipes, which this file also sets; keep one"))
		} else {
			delete(s.Params, "stop_on_suspended")
			s.Params["stop_on_disconnect"] = v
			s.renamed = append(s.renamed, s.fieldErr("params.stop_on_suspended", "read as stop_on_disconnect (go-zookeeper's Disconnected is Curator's SUSPENDED)"))
		}
	}
	// The token source, in the file's spelling: the retired model's files
	// say fencing (retired.go), a newer one may say token_source.
	source := algorithms.ParamTokenSource
	if _, old := s.Params[retiredParamFencing]; old {
		source = retiredParamFencing
	}
	switch v, ok := s.Params[source]; {
	case !ok:
	case v == "none" || v == "sequence":
		// A go-zookeeper recipe's lease always carries its node's
		// sequence number + 1; resource.token_check decides whether the
		// store checks it.
		delete(s.Params, source)
		s.renamed = append(s.renamed, s.fieldErr("params."+source, "dropped: a go-zookeeper recipe's lease always carries its node's sequence number + 1 as its fencing token (resource.token_check decides whether the store checks it)"))
	default:
		delete(s.Params, source) // refused here, not again as unread
		errs = append(errs, s.fieldErr("params."+source, "the go-zookeeper recipes fence with the node's sequence number + 1, which their leases always carry, not with %q; remove params.%s and set resource.token_check: \">\"", v, source))
	}
	switch v, ok := s.Params["guid_protection"]; {
	case !ok:
	case v == "true":
		delete(s.Params, "guid_protection")
		s.renamed = append(s.renamed, s.fieldErr("params.guid_protection", "dropped: the go-zookeeper queue recipes always protect their node names"))
	default:
		delete(s.Params, "guid_protection")
		errs = append(errs, s.fieldErr("params.guid_protection", "the go-zookeeper queue recipes always protect their node names; for the recipe that loses its node after an unanswered lookup write algorithm: gozk-queue-naive and remove params.guid_protection"))
	}
	if _, ok := s.Params["request_timeout"]; ok {
		delete(s.Params, "request_timeout")
		errs = append(errs, s.fieldErr("params.request_timeout", "go-zookeeper waits for a reply as long as its read timeout, 2/3 of the session timeout, and cannot be told otherwise; remove params.request_timeout (params.session_timeout sets both)"))
	}
	if _, ok := s.Params["lost_after"]; ok {
		if _, on := s.Params["replace_handle_on_lost"]; !on {
			delete(s.Params, "lost_after")
			errs = append(errs, s.fieldErr("params.lost_after", "go-zookeeper has no LOST timer of its own; Curator's (a new session lost_after after the connection is lost) is params.replace_handle_on_lost: \"true\" with params.lost_after, on gozk-queue or gozk-queue-naive"))
		}
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		field := fmt.Sprintf("faults[%d]", i)
		for _, p := range []struct {
			name string
			v    *string
		}{{"target", &f.Target}, {"node", &f.Node}, {"client", &f.Client}} {
			if *p.v == retiredZKServer {
				*p.v = "zk1"
				s.renamed = append(s.renamed, s.fieldErr(field+"."+p.name, "the ZooKeeper server zk is zk1 in the one-server ensemble"))
			}
		}
		if f.After != nil && f.After.Node == retiredZKServer {
			f.After.Node = "zk1"
			s.renamed = append(s.renamed, s.fieldErr(field+".after.node", "the ZooKeeper server zk is zk1 in the one-server ensemble"))
		}
		for g, group := range f.Groups {
			if j := slices.Index(group, retiredZKServer); j >= 0 {
				group[j] = "zk1"
				s.renamed = append(s.renamed, s.fieldErr(fmt.Sprintf("%s.groups[%d][%d]", field, g, j), "the ZooKeeper server zk is zk1 in the one-server ensemble"))
			}
		}
	}
	return errs
}
