package sim

// Saying what a stuck run waits on (see bubble.go).

import (
	"runtime"
	"strings"
	"sync/atomic"
)

// BubbleProgress counts kernel steps of every bubble world in the process.
// A watchdog outside the bubble (locktest's) reads it: when it stops
// moving while a run is under way, some goroutine of the bubble waits on
// something outside it (a real socket, a mutex, a channel made outside the
// bubble), which synctest cannot see through, and the run would hang.
var BubbleProgress atomic.Uint64

// BlockedGoroutines describes the goroutines of synctest bubbles that wait
// on something, one line each with what they wait on and where, for
// failure messages; durable selects whether durably blocked (in-bubble
// channels, timers) or the others are listed. The kernel's own goroutines
// are left out.
func BlockedGoroutines(durable bool) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 3 || !strings.Contains(lines[0], "synctest bubble") {
			continue
		}
		state := lines[0]
		if i := strings.Index(state, "["); i >= 0 {
			state = strings.TrimSuffix(state[i+1:], "]:")
		}
		if strings.Contains(state, "durable") != durable || strings.HasPrefix(state, "synctest.Wait") || strings.HasPrefix(state, "running") || strings.HasPrefix(state, "runnable") {
			continue
		}
		// The first frame outside the runtime and the kernel says where.
		where := ""
		for i := 1; i+1 < len(lines); i += 2 {
			fn := strings.TrimSpace(lines[i])
			if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/") || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "time.") || strings.Contains(fn, "locklab/sim.") {
				continue
			}
			where = fn + " at " + strings.TrimSpace(lines[i+1])
			break
		}
		if where == "" || strings.HasPrefix(where, "testing") || strings.HasPrefix(where, "github.com/locklab/locklab/scenarios.") || strings.HasPrefix(where, "github.com/locklab/locklab/sim/bubblehost.") {
			continue // the harness itself
		}
		if i := strings.LastIndex(where, " +0x"); i >= 0 {
			where = where[:i]
		}
		// The arguments are the last parenthesis before " at ": a method's
		// receiver, as in gozk.(*Queue).wait, has one too.
		if j := strings.Index(where, " at "); j >= 0 {
			if i := strings.LastIndex(where[:j], "("); i >= 0 {
				where = where[:i] + where[j:]
			}
		}
		state, _, _ = strings.Cut(state, ", synctest bubble")
		out = append(out, "    "+state+": "+where)
		if len(out) == 8 {
			out = append(out, "    …")
			break
		}
	}
	return strings.Join(out, "\n")
}
