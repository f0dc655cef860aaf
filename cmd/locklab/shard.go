package main

import (
	"strconv"
	"strings"
)

// maxShards bounds N in --shard I/N: a sweep split wider than this has
// shards of a handful of runs each, which cost more to start than to run.
const maxShards = 100_000

// parseShard reads --shard I/N: shard I (1-based, as a Kubernetes
// completion index plus one or a CI matrix entry) of N.
func parseShard(text string) (int, int, error) {
	is, ns, ok := strings.Cut(text, "/")
	if !ok {
		return 0, 0, usagef("--shard: expected I/N such as 2/8 (shard I of N, I from 1 to N), found %q", term(text, false))
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 || n > maxShards {
		return 0, 0, usagef("--shard %s: expected N, the number of shards, between 1 and %d, found %q", term(text, false), maxShards, term(ns, false))
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 1 || i > n {
		hint := ""
		if i == 0 && err == nil {
			hint = " (shards count from 1; a Kubernetes completion index counts from 0, add one)"
		}
		return 0, 0, usagef("--shard %s: expected I, the shard, between 1 and %d, found %q%s", term(text, false), n, term(is, false), hint)
	}
	return i, n, nil
}
