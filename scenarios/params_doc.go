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

// AlgorithmsByBackend groups the listed algorithms by backend: the
// backends' names, sorted, and each one's algorithms in registry order.
func AlgorithmsByBackend() (backends []string, byBackend map[string][]string) {
	byBackend = map[string][]string{}
	for _, name := range algorithms.Names() {
		info, _ := algorithms.Lookup(name)
		if byBackend[info.Backend] == nil {
			backends = append(backends, info.Backend)
		}
		byBackend[info.Backend] = append(byBackend[info.Backend], name)
	}
	sort.Strings(backends)
	return backends, byBackend
}

// ParamGroups lists every param the registries declare, grouped by who
// reads it, in a fixed order: the runner's, Redis's options, each backend's
// (sorted), each algorithm's own (sorted). 'locklab help scenario' prints
// it, so a param registered anywhere cannot be missing from the help
// (issue 31 item 7).
func ParamGroups() []ParamGroup {
	backends, byBackend := AlgorithmsByBackend()
	out := []ParamGroup{{Title: "every algorithm", Algorithms: algorithms.Names(), Params: scenarioParams}}
	// A backend that titles its params (Redis: "every redis algorithm")
	// comes first, then the others as "backend NAME".
	titled := func(name string) bool { return backendInfos[name].ParamsTitle != "" }
	sort.SliceStable(backends, func(i, j int) bool { return titled(backends[i]) && !titled(backends[j]) })
	for _, name := range backends {
		b := backendInfos[name]
		if len(b.Params) == 0 {
			continue
		}
		title := b.ParamsTitle
		if title == "" {
			title = "backend " + name
		}
		out = append(out, ParamGroup{Title: title, Algorithms: byBackend[name], Params: b.Params})
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
