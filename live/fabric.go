package live

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locklab/locklab/faults"
)

// fabric is a live run's network between clients, servers and the store:
// which links a partition cuts, which messages a drop or delay rule
// matches, and which messages a fault waits for (faults.Trigger). Every
// message a client sends or receives passes through it, in the client's
// proxy (proxy.go) or the store (store.go), so the scenario's message
// faults act on real traffic.
type fabric struct {
	mu    sync.Mutex
	start time.Time
	parts []window
	rules []*rule
	waits []*waiting
	rng   *rand.Rand
	// latency and jitter are the scenario's network (Network): every
	// message is held that long, plus a draw of jitter, on top of
	// loopback's own. Zero leaves loopback alone.
	latency, jitter time.Duration
	// fire runs a fault whose trigger matched, before the message that
	// matched it is acted on.
	fire func(f faults.Fault)
}

// window is an active partition: f until until (zero: until healed).
type window struct {
	f     faults.Fault
	until time.Time
}

// rule is an armed drop or delay rule.
type rule struct {
	f       faults.Fault
	until   time.Time
	matched int
}

// waiting is a fault armed on a message (After) that has not fired yet.
type waiting struct {
	f    faults.Fault
	seen int
}

// message is one message on the fabric: from one host to another, a
// request or a reply, of an operation (a Redis command's name, READ or
// WRITE at the store).
type message struct {
	from, to, op, dir string
}

// client is the message's client end, and node its server end.
func (m message) client() string {
	if m.dir == "reply" {
		return m.to
	}
	return m.from
}

func (m message) node() string {
	if m.dir == "reply" {
		return m.from
	}
	return m.to
}

// fate is what the fabric does with a message: deliver it after delay, or
// lose it.
type fate struct {
	drop  bool
	delay time.Duration
}

// pass decides a message's fate and fires the faults waiting for it. A
// trigger fires when the message arrives, before the receiver acts on it
// (faults.Trigger), so it fires only for a message that is delivered.
func (fb *fabric) pass(m message) fate {
	fb.mu.Lock()
	now := time.Now()
	var out fate
	out.delay = fb.latency
	if fb.jitter > 0 {
		out.delay += time.Duration(fb.rng.Int64N(int64(fb.jitter)))
	}
	if fb.cut(m.from, m.to, now) {
		out.drop = true
	}
	for _, r := range fb.rules {
		if !r.live(now) || !matches(r.f, m) {
			continue
		}
		if r.f.Probability > 0 && r.f.Probability < 1 && fb.rng.Float64() >= r.f.Probability {
			continue
		}
		r.matched++
		if r.f.Kind == faults.Drop {
			out.drop = true
		} else {
			out.delay += r.f.Duration.D()
		}
	}
	var fire []faults.Fault
	if !out.drop {
		for _, w := range fb.waits {
			if w.seen >= 0 && triggered(w.f.After, m) {
				w.seen++
				if w.seen == max(w.f.After.Nth, 1) {
					w.seen = -1
					fire = append(fire, w.f)
				}
			}
		}
	}
	fb.mu.Unlock()
	for _, f := range fire {
		fb.fire(f)
	}
	return out
}

// live reports whether the rule still acts: not past its duration nor its
// count.
func (r *rule) live(now time.Time) bool {
	if !r.until.IsZero() && !now.Before(r.until) {
		return false
	}
	return r.f.Count == 0 || r.matched < r.f.Count
}

// matches reports whether a drop or delay rule's pattern takes m.
func matches(f faults.Fault, m message) bool {
	return (f.Dir == "" || f.Dir == m.dir) &&
		(f.Client == "" || f.Client == m.client()) &&
		(f.Node == "" || f.Node == m.node()) &&
		(f.Op == "" || f.Op == m.op)
}

// triggered reports whether m is the kind of message t waits for.
func triggered(t *faults.Trigger, m message) bool {
	dir := t.Dir
	if dir == "" {
		dir = "reply"
	}
	return dir == m.dir && (t.Client == "" || t.Client == m.client()) &&
		(t.Node == "" || t.Node == m.node()) && (t.Op == "" || t.Op == m.op)
}

// cut reports whether an active partition separates from and to.
func (fb *fabric) cut(from, to string, now time.Time) bool {
	for _, p := range fb.parts {
		if !p.until.IsZero() && !now.Before(p.until) {
			continue
		}
		gf, gt := groupOf(p.f.Groups, from), groupOf(p.f.Groups, to)
		if gf < 0 || gt < 0 || gf == gt {
			continue
		}
		if !p.f.OneWay || gf == 0 && gt == 1 {
			return true
		}
	}
	return false
}

// groupOf is the index of the partition group holding host, or -1.
func groupOf(groups [][]string, host string) int {
	for i, g := range groups {
		if slices.Contains(g, host) {
			return i
		}
	}
	return -1
}

// partition, heal, addRule and await change the fabric.
func (fb *fabric) partition(f faults.Fault) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.parts = append(fb.parts, window{f: f, until: fb.until(f)})
}

func (fb *fabric) heal() {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.parts = nil
}

func (fb *fabric) addRule(f faults.Fault) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	r := &rule{f: f}
	if f.Kind == faults.Drop {
		r.until = fb.until(f)
	}
	fb.rules = append(fb.rules, r)
}

func (fb *fabric) await(f faults.Fault) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.waits = append(fb.waits, &waiting{f: f})
}

// until is when a fault with a duration stops acting (zero: never).
func (fb *fabric) until(f faults.Fault) time.Time {
	if f.Duration <= 0 {
		return time.Time{}
	}
	return time.Now().Add(f.Duration.D())
}

// cutNow reports whether a partition separates a and b, either way.
func (fb *fabric) cutNow(a, b string) bool {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	now := time.Now()
	return fb.cut(a, b, now) || fb.cut(b, a, now)
}
