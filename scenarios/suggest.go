package scenarios

import (
	"errors"
	"fmt"

	"github.com/locklab/locklab/algorithms"
)

// suggest is " (did you mean W?)" when found is a near miss of one of
// choices, else "": a typo in a fixed-choice setting (clients.clock,
// params.pooler, route, connection, refresh, clock, prefer) is answered
// with the word it meant (issue 32).
func suggest(found string, choices []string) string {
	if d := DidYouMean(found, choices); d != "" && d != found {
		return fmt.Sprintf(" (did you mean %s?)", d)
	}
	return ""
}

// suggestChoice is suggest for a param's refusal: err from
// algorithms.OneOf carries the words accepted; other checks suggest
// nothing.
func suggestChoice(found string, err error) string {
	var ce *algorithms.ChoiceError
	if errors.As(err, &ce) {
		return suggest(found, ce.Words)
	}
	return ""
}

// nothingToPromote is what a failover with nothing to promote is told,
// in the words of the scenario's backend: "give a node replica_of" is
// Redis's answer and means nothing to a Postgres or MySQL scenario
// (issue 32).
func nothingToPromote(algorithm string) string {
	info, err := algorithms.Lookup(algorithm)
	b := backendOf(info)
	switch {
	case err != nil || info.Backend == "" || b.RedisNodes:
		return ""
	case b.Standbys != nil:
		return fmt.Sprintf("this scenario has no standby to promote; set params.standby: true for a %s standby (db2) that a failover promotes", info.Backend)
	}
	return fmt.Sprintf("the %s backend has no replica or standby for a failover to promote (a failover promotes a Redis replica, a node with replica_of, or a Postgres standby, params.standby: true)", info.Backend)
}
