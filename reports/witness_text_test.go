package reports

import (
	"strings"
	"testing"

	"github.com/locklab/locklab/checker"
)

// Each kind of resource witness is explained as itself, not as a lost
// update (the checker names six kinds).
func TestResourceExplainNamesEachKind(t *testing.T) {
	w := checker.Access{Client: "c2", Kind: "write", Value: 97, Based: 99, FencingToken: 33, Accepted: true}
	o := checker.Access{Client: "c1", Kind: "write", Value: 98, FencingToken: 34, Accepted: true}
	for kind, want := range map[string]string{
		checker.StaleToken:     "older token 33",
		checker.DuplicateToken: "same fencing token 33",
		checker.NotReadMinus1:  "c2 wrote 97 after reading 99: one sale takes exactly one item",
		checker.StaleBase:      "c2 computed 97 from 99, but the resource held 98",
		checker.ABA:            "changed and changed back",
		checker.LostUpdate:     "silently undid that sale",
	} {
		got := resourceExplain(&checker.ResourceWitness{Kind: kind, Write: w, Overwritten: o, Held: 98})
		if !strings.Contains(got, want) {
			t.Errorf("%s: %q lacks %q", kind, got, want)
		}
	}
}
