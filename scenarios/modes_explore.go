package scenarios

import "fmt"

// Explore draws its own clients and shrinking removes clients, and both
// drop the per-client settings of the scenario they start from
// (Clients.Each). A reader-writer lock's clients must keep their modes
// through that, or every drawn client would be a writer and a reader's
// failure could never be found. The modes are kept as a cycle: drawn
// client i takes the mode of the base's client i, wrapping around.

// ModeCycle is sc's per-client modes in client order, or nil when no
// client overrides the scenario-wide mode.
func ModeCycle(sc *Scenario) []string {
	var cycle []string
	per := false
	for _, c := range sc.ClientNames() {
		if sc.Clients.Each[c].Mode != nil {
			per = true
		}
		cycle = append(cycle, sc.ModeOf(c))
	}
	if !per {
		return nil
	}
	return cycle
}

// WithModeCycle gives sc's clients the modes of cycle in turn.
func WithModeCycle(sc *Scenario, cycle []string) {
	if len(cycle) == 0 {
		return
	}
	if sc.Clients.Each == nil {
		sc.Clients.Each = map[string]Client{}
	}
	for i := 1; i <= sc.Clients.Count; i++ {
		name := fmt.Sprintf("c%d", i)
		c := sc.Clients.Each[name]
		m := cycle[(i-1)%len(cycle)]
		c.Mode = &m
		sc.Clients.Each[name] = c
	}
}

// ModesWithout is ModeCycle of sc once client n is removed and the
// clients after it renumbered, as explore's shrinking does.
func ModesWithout(sc *Scenario, n int) []string {
	cycle := ModeCycle(sc)
	if cycle == nil || n < 1 || n > len(cycle) {
		return cycle
	}
	return append(append([]string(nil), cycle[:n-1]...), cycle[n:]...)
}
