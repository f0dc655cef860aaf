package scenarios

import (
	"embed"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

//go:embed catalog/*.yaml
var catalogFS embed.FS

// Catalogue returns every built-in scenario, sorted by id.
func Catalogue() ([]*Scenario, error) {
	entries, err := catalogFS.ReadDir("catalog")
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, e := range entries {
		data, err := catalogFS.ReadFile("catalog/" + e.Name())
		if err != nil {
			return nil, err
		}
		s, err := Parse("catalog/"+e.Name(), data)
		if err != nil {
			return nil, err
		}
		s.File = ""
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Get returns the built-in scenario with the given id.
func Get(id string) (*Scenario, error) {
	all, err := Catalogue()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range all {
		if s.ID == id {
			return s, nil
		}
		ids = append(ids, s.ID)
	}
	return nil, fmt.Errorf("unknown scenario %q; expected a built-in id (see `locklab list`: %s) or a path to a .yaml file", id, strings.Join(ids, ", "))
}

// Load resolves a command-line argument under the default limits: a path
// to a scenario file if it looks like one, otherwise a built-in id.
func Load(arg string) (*Scenario, error) { return LoadWith(arg, DefaultLimits) }

func looksLikePath(arg string) bool {
	ext := path.Ext(arg)
	return ext == ".yaml" || ext == ".yml" || ext == ".json" || strings.ContainsRune(arg, os.PathSeparator)
}
