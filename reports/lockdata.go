package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/sim/event"
)

// A semaphore or a reader-writer lock keeps its state on a Redis node in
// structures named after the lock (a sorted set of permits "lock", its
// owners "lock:owner", a counter; a reader-writer hash and "lock:writer"),
// not in one string key with a TTL. The key lane draws a plain key's bars
// only, so a node that holds such structures must not read "no lock key":
// its lane names them and the commands that touched them, from the events.

// lockData is what one node ran on the lock's structures.
type lockData struct {
	Names    []string // structure names, in order of first use
	Commands []string // command names (upper case), in order of first use
	Events   []int
}

// lockDataNames are the names in args that are the lock's structures: the
// key itself (when not a plain string SET) or key:anything, and fence:key
// left out (the fencing counter is drawn as fence issues).
func lockDataNames(args []string, key string) []string {
	var out []string
	for _, a := range args[min(1, len(args)):] {
		if a == key || strings.HasPrefix(a, key+":") {
			out = append(out, a)
		}
	}
	return out
}

// noteStructure records event i, a command node ran, when it touched the
// lock's structures other than its plain string key (GET, SET, DEL, a
// compare-and-delete script and the like are the key lane's).
func (m *mechanism) noteStructure(node string, i int, e *event.Event, key string) {
	f := words(e)
	if len(f) < 2 {
		return
	}
	names := lockDataNames(f, key)
	if len(names) == 0 || plainKeyCommand(f, key) {
		return
	}
	if m.Structures == nil {
		m.Structures = map[string]*lockData{}
	}
	d := m.Structures[node]
	if d == nil {
		d = &lockData{}
		m.Structures[node] = d
	}
	for _, n := range names {
		if !slices.Contains(d.Names, n) {
			d.Names = append(d.Names, n)
		}
	}
	cmd := strings.ToUpper(f[0])
	if cmd == "EVAL" || cmd == "EVALSHA" {
		cmd = "a Lua script"
	}
	if !slices.Contains(d.Commands, cmd) {
		d.Commands = append(d.Commands, cmd)
	}
	d.Events = append(d.Events, i)
}

// plainKeyCommand reports whether f works on the plain string key alone,
// which the key lane draws.
func plainKeyCommand(f []string, key string) bool {
	names := lockDataNames(f, key)
	if len(names) != 1 || names[0] != key {
		return false
	}
	switch strings.ToUpper(f[0]) {
	case "SET", "GET", "DEL", "PEXPIRE", "EXPIRE", "PTTL", "TTL", "SETNX", "HINCRBY", "HGET", "HEXISTS", "INCR":
		return true
	case "EVAL", "EVALSHA":
		// The key lane's scripts: compare-and-delete, compare-and-pexpire
		// and the reentrant hash's, which name the key alone.
		return strings.HasPrefix(f[1], "<")
	}
	return false
}

// lockDataText is what a node's lane says of its lock structures.
func lockDataText(d *lockData) string {
	return fmt.Sprintf("lock state in %s (%s; not a plain key: see the holds above)", strings.Join(d.Names, ", "), strings.Join(d.Commands, ", "))
}
