package reports

import (
	"fmt"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/bubblehost"
)

func TestZZHosts(t *testing.T) {
	bubblehost.Bind(t)
	all, _ := scenarios.Catalogue()
	seen := map[string]bool{}
	for _, s := range all {
		if seen[s.Algorithm] {
			continue
		}
		seen[s.Algorithm] = true
		res, err := scenarios.Run(s, s.Seed, scenarios.Options{KeepTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%-40s %-24s", s.ID, s.Algorithm)
		for _, h := range res.Hosts {
			if h.Role != "client" {
				fmt.Printf(" %s=%q", h.Name, h.Role)
			}
		}
		fmt.Println()
	}
}
