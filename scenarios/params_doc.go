package scenarios

import (
	"sort"

	"github.com/locklab/locklab/algorithms"
)

// ParamGroup is a set of params a scenario may give, with who reads them:
// the runner itself (every algorithm), Build's cross-cutting options
// (every Redis algorithm), a backend's (every algorithm on it), or one
// algorithm's own.
type ParamGroup struct {
	// Title says who reads the params, such as "backend postgres" or
	// "algorithm redlock".
	Title string
	// Algorithms are the listed algorithms that accept the group.
	Algorithms []string
	Params     []algorithms.Param
}

// ParamGroups lists every param the registries declare, grouped by who
// reads it, in a fixed order: the runner's, Redis's options, each backend's
// (sorted), each algorithm's own (sorted). 'locklab help scenario' prints
// it, so a param registered anywhere cannot be missing from the help
// (issue 31 item 7).
func ParamGroups() []ParamGroup {
	byBackend := map[string][]string{}
	var backends []string
	for _, name := range algorithms.Names() {
		info, _ := algorithms.Lookup(name)
		if byBackend[info.Backend] == nil {
			backends = append(backends, info.Backend)
		}
		byBackend[info.Backend] = append(byBackend[info.Backend], name)
	}
	sort.Strings(backends)
	out := []ParamGroup{
		{Title: "every algorithm", Algorithms: algorithms.Names(), Params: scenarioParams},
		{Title: "every redis algorithm", Algorithms: byBackend["redis"], Params: algorithms.RedisParams},
	}
	for _, b := range backends {
		if ps := backendParams[b]; len(ps) > 0 {
			out = append(out, ParamGroup{Title: "backend " + b, Algorithms: byBackend[b], Params: ps})
		}
	}
	for _, name := range algorithms.Names() {
		info, _ := algorithms.Lookup(name)
		if len(info.Params) > 0 {
			out = append(out, ParamGroup{Title: "algorithm " + name, Algorithms: []string{name}, Params: info.Params})
		}
	}
	return out
}

// AcceptedParams are the params keys a scenario for algorithm may give, as
// Validate checks them (false for an unknown algorithm or a user's own
// lock, which reads what it likes).
func AcceptedParams(algorithm string) ([]algorithms.Param, bool) {
	return acceptedParams(algorithm)
}
