package differential

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"
)

// TestMain makes 1,000 sequences per property the default (the issue's
// floor for a CI run); an explicit -rapid.checks wins.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "rapid.checks" })
	if !set {
		flag.Set("rapid.checks", "1000")
	}
	os.Exit(m.Run())
}

// Grid is the time between two phases of a sequence (see the package doc).
const Grid = 20 * time.Millisecond

const (
	// phaseWindow is how long after its phase began a real command may
	// return. A key set e into its phase expires e + (k+½)·Grid later: that
	// is after every command of the phase it falls in (they end before
	// ½·Grid) and before the next phase begins (e < ½·Grid), so every
	// command sees the key alive or gone on both sides alike. 2 ms spare
	// cover Redis's millisecond clock.
	phaseWindow = Grid/2 - 2*time.Millisecond
	// ttlTolerance bounds |real - simulated| for a PTTL: a key set and read
	// each up to phaseWindow into its phase, plus rounding to milliseconds.
	ttlTolerance = int64(phaseWindow/time.Millisecond) + 2
	// realAttempts is how often a real run is tried when it does not keep
	// time before the sequence is skipped (which, while rapid shrinks a
	// difference, would cut the shrinking short), with a growing pause
	// between tries to let a burst of load pass.
	realAttempts = 10
)

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
	late    string // why a real run did not keep time, or ""
}

// execute runs steps on a side. phases is nil for the real side, which
// decides them (a phase that would already have begun moves on to the next
// free one); the simulated side follows the phases the real run used.
func execute(b side, steps []step, phases []int) runResult {
	r := runResult{replies: make([]string, len(steps)), phase: make([]int, len(steps))}
	phase := 0
	promoted := false
	moveOn := func(i, n int) {
		target := phase + n
		if phases != nil {
			target = phases[i]
		} else if el := b.elapsed(); el >= time.Duration(target)*Grid {
			target = int(el/Grid) + 1
		}
		b.sleepUntil(time.Duration(target) * Grid)
		phase = target
	}
	for i, s := range steps {
		switch s.kind {
		case cmdStep:
			if s.node == 1 && !promoted {
				b.sync()
			}
			r.replies[i] = b.do(s.node, s.args)
			if phases == nil && !s.untimed {
				if el := b.elapsed(); el > time.Duration(phase)*Grid+phaseWindow {
					r.late = fmt.Sprintf("step %d (%s) returned %v after the sequence began, phase %d ends at %v",
						i+1, s, el.Round(time.Microsecond), phase, time.Duration(phase)*Grid+phaseWindow)
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
						resumeAt = time.Duration(phases[j]) * Grid
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

// same says whether two replies to step s agree.
func same(s step, real, simulated string) bool {
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
				return max(x-y, y-x) <= ttlTolerance
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
	for i, s := range steps {
		if s.kind != cmdStep || same(s, real.replies[i], simulated.replies[i]) {
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
			fmt.Fprintf(&b, "  (wait until %v after the first command)\n", time.Duration(real.phase[j])*Grid)
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
			step{args: []string{"PTTL", k}, node: node, probe: true, ttl: true},
		)
	}
	return out
}

// differential runs steps on the real side (repeating a run that did not
// keep time, after reset) and on a fresh simulated side, and compares.
// skipped counts sequences the machine was too slow to judge.
func differential(t *rapid.T, title string, steps []step, setup []string, reset func(), realSide func() side, simRun func(phases []int) runResult, tally *tally) {
	tally.checks++
	var real runResult
	for attempt := 1; ; attempt++ {
		reset()
		real = execute(realSide(), steps, nil)
		if real.late == "" {
			break
		}
		if attempt == realAttempts {
			tally.skipped++
			tally.lastLate = real.late
			t.Skipf("machine too slow to keep the phase grid %d times: %s", realAttempts, real.late)
		}
		time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
	}
	simulated := simRun(real.phase)
	compare(t, title, steps, real, simulated, setup)
}
