package differential

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/sim/proptest"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"
)

// TestMain makes 1,000 sequences per property the default (the issue's
// floor for a CI run), from rapid's pinned seed; an explicit -rapid.checks
// or -rapid.seed wins, and a deep run (LOCKLAB_DEEP=1) draws a new seed
// and runs ten times as many (see package proptest).
func TestMain(m *testing.M) { proptest.Main(m, 1000) }

// baseGrid is the time between two phases of a sequence on a machine that
// keeps time (see the package doc).
const baseGrid = 20 * time.Millisecond

// gridScales are the grids a real run is tried on, as multiples of
// baseGrid: a run in which some command did not return inside its phase's
// window says nothing about Redis, only about the machine's load, so it is
// run again, twice on the base grid and then on ever coarser ones, until one
// keeps time. A sequence is always judged, whatever the load: the only
// timing assumption left is that some command returns within 1.278 s of
// being sent on loopback (the window of the coarsest grid, 2.56 s), against
// the 8 ms that an idle machine needs by far: a margin of 160×.
var gridScales = []int{1, 1, 2, 4, 8, 16, 32, 64, 128}

// grid is the time between two phases of one run. Expiries that can fall
// due during a run are written in phases (shortTTL) and turned into
// milliseconds for the run's grid, so both sides of a comparison use the
// same grid and a coarser grid keeps every ordering the base grid promised.
type grid time.Duration

// at is when phase n begins, after the sequence's start.
func (g grid) at(n int) time.Duration { return time.Duration(n) * time.Duration(g) }

// window is how long after its phase began a real command may return. A key
// set e into its phase expires e + (k+½)·g later: that is after every
// command of the phase it falls in (they end before ½·g) and before the
// next phase begins (e < ½·g), so every command sees the key alive or gone
// on both sides alike. 2 ms spare cover Redis's millisecond clock.
func (g grid) window() time.Duration { return time.Duration(g)/2 - 2*time.Millisecond }

// ttlTolerance bounds |real - simulated| for a PTTL: a key set and read each
// up to window into its phase, plus rounding to milliseconds.
func (g grid) ttlTolerance() int64 { return int64(g.window()/time.Millisecond) + 2 }

// phaseTTL matches an expiry written in half phases (see shortTTL).
var phaseTTL = regexp.MustCompile(`@(\d+)/2`)

// resolve turns every expiry written in half phases into milliseconds on g.
func (g grid) resolve(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return phaseTTL.ReplaceAllStringFunc(s, func(m string) string {
		halves, _ := strconv.Atoi(phaseTTL.FindStringSubmatch(m)[1])
		return strconv.FormatInt(int64(time.Duration(halves)*time.Duration(g)/2/time.Millisecond), 10)
	})
}

func (g grid) resolveAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = g.resolve(a)
	}
	return out
}

type stepKind int

const (
	cmdStep     stepKind = iota
	advanceStep          // wait for a later phase
	promoteStep          // the replica becomes master (REPLICAOF NO ONE / Promote)
	crashStep            // kill -9 and restart from the AOF (Crash / Restart("always"))
	stallStep            // the replica stops taking in its stream (SIGSTOP / messages held back)
	resumeStep           // the replica catches up (SIGCONT / held messages arrive)
)

// step is one thing a sequence does on both sides.
type step struct {
	kind  stepKind
	args  []string
	node  int  // 0: the master (or the only node); 1: the replica
	ttl   bool // the integer reply is a TTL in ms: compared within ttlTolerance
	pairs bool // the reply is HGETALL's field/value list: compared as a set
	set   bool // the reply is a list in no defined order (KEYS): compared sorted
	// untimed: the command may take long (a WAIT that times out); it is
	// exempt from the phase window, and an advance must follow it.
	untimed bool
	probe   bool // part of the final dataset comparison
	grid    int  // advanceStep: how many phases to move on
}

func (s step) String() string {
	switch s.kind {
	case advanceStep:
		return fmt.Sprintf("advance %d", s.grid)
	case promoteStep:
		return "promote replica"
	case crashStep:
		return "kill -9 and restart"
	case stallStep:
		return "stall replica"
	case resumeStep:
		return "resume replica"
	}
	prefix := ""
	if s.node == 1 {
		prefix = "replica> "
	}
	return prefix + cliLine(s.args)
}

// cliLine quotes a command as redis-cli reads it: arguments with spaces or
// quotes in single quotes (the lock scripts contain double quotes only).
func cliLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'\\\t\n") {
			a = "'" + strings.ReplaceAll(strings.ReplaceAll(a, `\`, `\\`), "'", `\'`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// side is one of the two systems under comparison.
type side interface {
	// do runs a command on node 0 or 1 and renders the reply.
	do(node int, args []string) string
	// sync returns once the replica has applied everything the master did.
	sync()
	promote()
	// crashRestart kills the master and brings it back from its AOF;
	// wait moves on to the phase at which it is back.
	crashRestart(wait func())
	// stall stops the replica until resume; resumeAt is when, in true time
	// since the start, (known to the simulated side only: it runs second).
	stall(resumeAt time.Duration)
	resume()
	elapsed() time.Duration
	sleepUntil(d time.Duration)
}

// runResult is what one side answered, and the phase each step ran in.
type runResult struct {
	replies []string
	phase   []int
	grid    grid   // the grid the phases are on
	late    string // why a real run did not keep time, or ""
}

// execute runs steps on a side. phases is nil for the real side, which
// decides them (a phase that would already have begun moves on to the next
// free one); the simulated side follows the phases the real run used.
func execute(b side, steps []step, phases []int, g grid) runResult {
	r := runResult{replies: make([]string, len(steps)), phase: make([]int, len(steps)), grid: g}
	phase := 0
	promoted := false
	moveOn := func(i, n int) {
		target := phase + n
		if phases != nil {
			target = phases[i]
		} else if el := b.elapsed(); el >= g.at(target) {
			target = int(el/time.Duration(g)) + 1
		}
		b.sleepUntil(g.at(target))
		phase = target
	}
	for i, s := range steps {
		switch s.kind {
		case cmdStep:
			if s.node == 1 && !promoted {
				b.sync()
			}
			r.replies[i] = b.do(s.node, g.resolveAll(s.args))
			if phases == nil && !s.untimed {
				if el := b.elapsed(); el > g.at(phase)+g.window() {
					r.late = fmt.Sprintf("step %d (%s) returned %v after the sequence began, phase %d ends at %v",
						i+1, s, el.Round(time.Microsecond), phase, g.at(phase)+g.window())
					return r
				}
			}
		case advanceStep:
			moveOn(i, s.grid)
		case promoteStep:
			b.sync()
			b.promote()
			promoted = true
		case crashStep:
			b.crashRestart(func() { moveOn(i, 1) })
		case stallStep:
			var resumeAt time.Duration
			if phases != nil {
				for j := i + 1; j < len(steps); j++ {
					if steps[j].kind == resumeStep {
						resumeAt = g.at(phases[j])
						break
					}
				}
			}
			b.stall(resumeAt)
		case resumeStep:
			b.resume()
		}
		r.phase[i] = phase
	}
	return r
}

// render prints a go-redis result the way redis-cli would, so both sides are
// compared on one canonical text and a difference reads naturally.
func render(v any, err error) string {
	if err == redis.Nil {
		return "(nil)"
	}
	if err != nil {
		return "(error) " + err.Error()
	}
	switch x := v.(type) {
	case nil:
		return "(nil)"
	case int64:
		return "(integer) " + strconv.FormatInt(x, 10)
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e, nil)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("(%T) %v", v, v)
}

func doRender(c *redis.Client, ctx context.Context, args []string) string {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return render(c.Do(ctx, a...).Result())
}

// same says whether two replies to step s agree, on grid g.
func same(s step, real, simulated string, g grid) bool {
	if real == simulated {
		return true
	}
	if s.ttl {
		a, okA := strings.CutPrefix(real, "(integer) ")
		b, okB := strings.CutPrefix(simulated, "(integer) ")
		if okA && okB {
			x, errA := strconv.ParseInt(a, 10, 64)
			y, errB := strconv.ParseInt(b, 10, 64)
			if errA == nil && errB == nil && x >= 0 && y >= 0 {
				return max(x-y, y-x) <= g.ttlTolerance()
			}
		}
	}
	if s.pairs {
		return sortedPairs(real) == sortedPairs(simulated)
	}
	if s.set {
		return sortedItems(real) == sortedItems(simulated)
	}
	return false
}

// sortedPairs renders an HGETALL reply with its pairs sorted: Redis does not
// define the order of a hash's fields.
func sortedPairs(r string) string {
	inner, ok := strings.CutPrefix(r, "[")
	if !ok {
		return r
	}
	items := strings.Split(strings.TrimSuffix(inner, "]"), ", ")
	if len(items)%2 != 0 {
		return r
	}
	var pairs []string
	for i := 0; i < len(items); i += 2 {
		pairs = append(pairs, items[i]+"="+items[i+1])
	}
	slices.Sort(pairs)
	return strings.Join(pairs, " ")
}

// sortedItems renders a list reply with its items sorted.
func sortedItems(r string) string {
	inner, ok := strings.CutPrefix(r, "[")
	if !ok {
		return r
	}
	items := strings.Split(strings.TrimSuffix(inner, "]"), ", ")
	slices.Sort(items)
	return strings.Join(items, " ")
}

// compare fails t at the first step whose replies differ, printing the
// sequence up to it as commands to paste into redis-cli (lines in
// parentheses are what to do between them), then every reply of both sides.
func compare(t *rapid.T, title string, steps []step, real, simulated runResult, setup []string) {
	steps = resolvedSteps(steps, real.grid)
	for i, s := range steps {
		if s.kind != cmdStep || same(s, real.replies[i], simulated.replies[i], real.grid) {
			continue
		}
		var b strings.Builder
		what := "reply"
		if s.probe {
			what = "final dataset"
		}
		fmt.Fprintf(&b, "%s: %s differs at step %d: %s\n  real redis-server: %s\n  simulated node:    %s\n",
			title, what, i+1, s, real.replies[i], simulated.replies[i])
		// Reading the final dataset is many steps; only the one that
		// differs is worth replaying.
		shown := func(j int) bool { return !steps[j].probe || j == i }
		b.WriteString("commands (paste into redis-cli; \"replica>\" lines go to the replica's redis-cli):\n")
		for _, l := range setup {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		wait := func(j int) {
			fmt.Fprintf(&b, "  (wait until %v after the first command)\n", real.grid.at(real.phase[j]))
		}
		for j, p := range steps[:i+1] {
			switch p.kind {
			case cmdStep:
				if shown(j) {
					fmt.Fprintf(&b, "  %s\n", p)
				}
			case advanceStep:
				wait(j)
			case promoteStep:
				b.WriteString("  replica> REPLICAOF NO ONE\n")
			case crashStep:
				b.WriteString("  (kill -9 the server and start it again: appendonly yes, appendfsync always)\n")
				wait(j)
			case stallStep:
				b.WriteString("  (kill -STOP the replica)\n")
			case resumeStep:
				b.WriteString("  (kill -CONT the replica)\n")
			}
		}
		b.WriteString("replies (real redis-server | simulated node):\n")
		for j, p := range steps[:i+1] {
			if p.kind == cmdStep && shown(j) {
				fmt.Fprintf(&b, "  %2d %s\n       %s | %s\n", j+1, abbreviate(p.String()), real.replies[j], simulated.replies[j])
			}
		}
		t.Fatal(b.String())
	}
}

// abbreviate shortens a command line holding a Lua script to the script's
// name, for the replies table.
func abbreviate(line string) string {
	for _, s := range lockScripts {
		line = strings.ReplaceAll(line, cliLine([]string{s.src}), "<"+s.name+">")
	}
	return line
}

// probe appends the final dataset comparison: for every key of the key
// space its type, value and TTL, read on node.
func probe(node int) []step {
	// KEYS * catches a key outside the key space (none should exist); a
	// replica leaves out keys its clock says have expired, as reads do.
	out := []step{{args: []string{"KEYS", "*"}, node: node, probe: true, set: true}}
	for _, k := range keys {
		out = append(out,
			step{args: []string{"TYPE", k}, node: node, probe: true},
			step{args: []string{"GET", k}, node: node, probe: true},
			step{args: []string{"HGETALL", k}, node: node, probe: true, pairs: true},
			step{args: []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}, node: node, probe: true},
			step{args: []string{"PTTL", k}, node: node, probe: true, ttl: true},
		)
	}
	return out
}

// resolvedSteps is steps with every expiry in milliseconds on g, as they
// were sent, for printing.
func resolvedSteps(steps []step, g grid) []step {
	out := slices.Clone(steps)
	for i := range out {
		out[i].args = g.resolveAll(out[i].args)
	}
	return out
}

// fataler is what realRun needs of a *testing.T or a *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// realRun runs steps on the real side, after reset, on the grids of
// gridScales in turn until a run keeps time (see gridScales). It fails,
// never skips: a machine that cannot return one command in over a second
// is broken, not busy.
func realRun(t fataler, steps []step, reset func(), realSide func() side, tally *tally) runResult {
	var late string
	for try, scale := range gridScales {
		reset()
		r := execute(realSide(), steps, nil, grid(time.Duration(scale)*baseGrid))
		if r.late == "" {
			if try > 0 && tally != nil {
				tally.retried++
				tally.lastLate = late
				tally.coarsest = max(tally.coarsest, r.grid)
			}
			return r
		}
		late = r.late
	}
	t.Fatalf("no real run kept time even on a %v grid: %s", time.Duration(gridScales[len(gridScales)-1])*baseGrid, late)
	return runResult{}
}

// differential runs steps on the real side (again on a coarser grid when a
// run did not keep time) and on a fresh simulated side on the same grid and
// phases, and compares.
func differential(t *rapid.T, title string, steps []step, setup []string, reset func(), realSide func() side, simRun func(g grid, phases []int) runResult, tally *tally) {
	tally.checks++
	real := realRun(t, steps, reset, realSide, tally)
	simulated := simRun(real.grid, real.phase)
	compare(t, title, steps, real, simulated, setup)
}
