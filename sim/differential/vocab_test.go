package differential

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim"
	"pgregory.net/rapid"
)

// The key space is small so that commands collide: a lock, a second lock,
// and the fencing counter of the first.
var (
	keys   = []string{"lock:a", "lock:b", "fence:lock:a"}
	values = []string{"t1", "t2", "1", "41"}
	owners = []string{"c1:1", "c2:1"}
)

// shortTTL is an expiry that can fall due during a run: (k+½) phases, so it
// falls half-way between two phases. It is written in half phases ("@3/2")
// and sent in milliseconds on the run's grid (grid.resolve). Long ones
// never fall due.
func shortTTL(k int) string {
	return "@" + strconv.Itoa(2*k+1) + "/2"
}

var (
	ttlsMS  = []string{shortTTL(0), shortTTL(1), shortTTL(2), "100000", "3600000"}
	ttlsSec = []string{"100", "3600"}
)

// lockScript is one Lua script of package algorithms (algorithms'
// TestScriptsHaveNativeFastPath pins them to sim's constants byte for byte).
type lockScript struct {
	name, src, sha string
	args           func(t *rapid.T) []string // ARGV
	ttlReply       bool                      // replies a PTTL
	keys           int                       // KEYS it takes (0: one)
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func draw(t *rapid.T, from []string, label string) string {
	return rapid.SampledFrom(from).Draw(t, label)
}

var lockScripts = func() []lockScript {
	ttlOwner := func(t *rapid.T) []string { return []string{draw(t, ttlsMS, "ttl"), draw(t, owners, "owner")} }
	s := []lockScript{
		{name: "compare-and-delete", src: sim.ScriptCompareAndDelete,
			args: func(t *rapid.T) []string { return []string{draw(t, values, "token")} }},
		{name: "compare-and-pexpire", src: sim.ScriptCompareAndPExpire,
			args: func(t *rapid.T) []string { return []string{draw(t, values, "token"), draw(t, ttlsMS, "ttl")} }},
		{name: "reentrant-acquire", src: sim.ScriptReentrantAcquire, args: ttlOwner, ttlReply: true},
		{name: "reentrant-release", src: sim.ScriptReentrantRelease, args: ttlOwner},
		{name: "reentrant-renew", src: sim.ScriptReentrantRenew, args: ttlOwner},
		// The reader-writer lock's scripts (issue 23): KEYS are the hash
		// and the waiting-writer marker.
		{name: "rw-read", src: algorithms.ScriptRWRead, args: rwArgs, keys: 2},
		{name: "rw-write", src: algorithms.ScriptRWWrite, args: rwArgs, keys: 2},
		{name: "rw-release", src: algorithms.ScriptRWRelease,
			args: func(t *rapid.T) []string { return []string{draw(t, owners, "owner")} }},
		// The permit-expiring semaphore's scripts (issue 23): KEYS are the
		// free counter and the sorted set of leases; the client's "now"
		// and lease ends travel as ARGV, so both sides see the same times.
		{name: "permit-acquire", src: algorithms.ScriptPermitAcquire, keys: 2,
			args: func(t *rapid.T) []string {
				return []string{draw(t, []string{"1", "2"}, "permits"), draw(t, owners, "permit"), draw(t, permitNows, "now"), draw(t, permitEnds, "end")}
			}},
		{name: "permit-refresh", src: algorithms.ScriptPermitRefresh, args: permitRefreshArgs, keys: 2},
		{name: "permit-refresh-blind", src: algorithms.ScriptPermitRefreshBlind, args: permitRefreshArgs, keys: 2},
		{name: "permit-release", src: algorithms.ScriptPermitRelease, keys: 2,
			args: func(t *rapid.T) []string { return []string{draw(t, owners, "permit"), draw(t, permitNows, "now")} }},
	}
	for i := range s {
		s[i].sha = sha1hex(s[i].src)
	}
	return s
}()

// The permit scripts' clock readings (ms): a lease taken at one "now"
// ends before, at or after the others.
var (
	permitNows = []string{"1000", "2000", "3000"}
	permitEnds = []string{"2000", "2500", "4000"}
)

// permitRefreshArgs are a permit refresh's ARGV: permit id, now, lease end.
func permitRefreshArgs(t *rapid.T) []string {
	return []string{draw(t, owners, "permit"), draw(t, permitNows, "now"), draw(t, permitEnds, "end")}
}

// rwArgs are a reader-writer script's ARGV: ttl, token, prefer-writers.
func rwArgs(t *rapid.T) []string {
	return []string{draw(t, ttlsMS, "ttl"), draw(t, owners, "owner"), draw(t, []string{"0", "1"}, "prefer")}
}

// command draws one command of the lock vocabulary for the master (or the
// only node). replicas is how many replicas the master has, for WAIT.
func command(t *rapid.T, replicas int) step {
	key := func() string { return draw(t, keys, "key") }
	switch draw(t, []string{
		"set", "set", "set", "get", "get", "del", "exists", "pexpire", "pttl", "incr",
		"hset", "hincrby", "hget", "hdel", "eval", "eval", "eval", "evalsha", "evalsha", "script-load", "wait",
	}, "command") {
	case "set":
		args := []string{"SET", key(), draw(t, values, "value")}
		if c := draw(t, []string{"", "NX", "XX"}, "condition"); c != "" {
			args = append(args, c)
		}
		switch draw(t, []string{"", "PX", "PX", "EX"}, "expiry") {
		case "PX":
			args = append(args, "PX", draw(t, ttlsMS, "px"))
		case "EX":
			args = append(args, "EX", draw(t, ttlsSec, "ex"))
		}
		if rapid.IntRange(0, 3).Draw(t, "get") == 0 {
			args = append(args, "GET")
		}
		return step{args: args}
	case "get":
		return step{args: []string{"GET", key()}}
	case "del":
		return step{args: append([]string{"DEL", key()}, rapid.SliceOfN(rapid.SampledFrom(keys), 0, 1).Draw(t, "more")...)}
	case "exists":
		return step{args: append([]string{"EXISTS", key()}, rapid.SliceOfN(rapid.SampledFrom(keys), 0, 1).Draw(t, "more")...)}
	case "pexpire":
		return step{args: []string{"PEXPIRE", key(), draw(t, append([]string{"0"}, ttlsMS...), "ttl")}}
	case "pttl":
		return step{args: []string{"PTTL", key()}, ttl: true}
	case "incr":
		return step{args: []string{"INCR", key()}}
	case "hset":
		return step{args: []string{"HSET", key(), draw(t, owners, "field"), draw(t, values, "value")}}
	case "hincrby":
		return step{args: []string{"HINCRBY", key(), draw(t, owners, "field"), draw(t, []string{"1", "-1"}, "by")}}
	case "hget":
		return step{args: []string{"HGET", key(), draw(t, owners, "field")}}
	case "hdel":
		return step{args: []string{"HDEL", key(), draw(t, owners, "field")}}
	case "eval", "evalsha":
		s := rapid.SampledFrom(lockScripts).Draw(t, "script")
		head := []string{"EVAL", s.src}
		if rapid.IntRange(0, 2).Draw(t, "evalsha") == 0 {
			head = []string{"EVALSHA", s.sha}
		}
		ks := []string{key()}
		for len(ks) < s.keys {
			ks = append(ks, key())
		}
		head = append(append(head, strconv.Itoa(len(ks))), ks...)
		return step{args: append(head, s.args(t)...), ttl: s.ttlReply}
	case "script-load":
		return step{args: []string{"SCRIPT", "LOAD", rapid.SampledFrom(lockScripts).Draw(t, "script").src}}
	default: // wait
		// WAIT for every replica there is. For more, a real server blocks
		// for the whole timeout and ends it only on its 100 ms cron. For
		// fewer (WAIT 0 with a replica) it replies at once with the replicas
		// whose last acknowledgement covers the write, and a real replica
		// acknowledges on its own only once a second: a race, not a
		// behaviour to compare.
		if replicas == 0 {
			return step{args: []string{"WAIT", "0", draw(t, []string{"0", "1000"}, "timeout")}}
		}
		return step{args: []string{"WAIT", strconv.Itoa(replicas), "1000"}}
	}
}

// replicaCommand draws a command sent to the replica: reads, and writes
// that a read-only replica must refuse.
func replicaCommand(t *rapid.T) step {
	key := draw(t, keys, "key")
	var s step
	switch draw(t, []string{"get", "get", "exists", "pttl", "hget", "set", "incr"}, "replica-command") {
	case "get":
		s = step{args: []string{"GET", key}}
	case "exists":
		s = step{args: []string{"EXISTS", key}}
	case "pttl":
		s = step{args: []string{"PTTL", key}, ttl: true}
	case "hget":
		s = step{args: []string{"HGET", key, draw(t, owners, "field")}}
	case "set":
		s = step{args: []string{"SET", key, draw(t, values, "value"), "PX", draw(t, ttlsMS, "px")}}
	default:
		s = step{args: []string{"INCR", key}}
	}
	s.node = 1
	return s
}

// advance draws a wait of one or two phases.
func advance(t *rapid.T) step {
	return step{kind: advanceStep, grid: rapid.IntRange(1, 2).Draw(t, "phases")}
}

// masterStep draws a command for the master (one in ten: an advance).
func masterStep(replicas int) *rapid.Generator[step] {
	return rapid.Custom(func(t *rapid.T) step {
		if rapid.IntRange(0, 9).Draw(t, "advance?") == 9 {
			return advance(t)
		}
		return command(t, replicas)
	})
}
