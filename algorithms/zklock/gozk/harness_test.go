package gozk

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
)

// A small lock workload on the simulated ensemble: clients take the lock
// in turn, hold it for a while (the critical section) and release it,
// while a fault plan acts on the ensemble. Holds are recorded in virtual
// time; two clients' holds overlapping is a mutual-exclusion violation,
// clients that cannot finish their rounds by the horizon a liveness
// violation.

type locker interface {
	Lock() error
	Unlock() error
}

type zkLock struct{ l *zk.Lock }

func (z zkLock) Lock() error   { return z.l.Lock() }
func (z zkLock) Unlock() error { return z.l.Unlock() }

type queueLock struct{ *Queue }

func (q queueLock) Lock() error { _, err := q.Queue.Lock(); return err }

type workload struct {
	name           string
	cfg            ensemble.Config
	clients        int
	rounds         int
	hold           time.Duration
	sessionTimeout time.Duration
	horizon        time.Duration
	// stopOnLoss ends a hold when the client sees its connection drop
	// (Curator's SUSPENDED); otherwise the holder acts until it is done.
	stopOnLoss bool
	newLock    func(c *zk.Conn, i int, rnd *rand.Rand) locker
	plan       func(e *ensemble.Ensemble, rnd *rand.Rand, app *appControl)
}

// appControl lets a fault plan freeze a client's application (the pause
// fault): a paused client's critical section cannot end and it cannot
// look at its connection state until it resumes.
type appControl struct {
	mu     sync.Mutex
	paused map[int]bool
}

func (a *appControl) set(i int, p bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.paused[i] = p
}

func (a *appControl) isPaused(i int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.paused[i]
}

type hold struct {
	client     int
	start, end time.Duration
}

type outcome struct {
	holds       []hold
	done        int // rounds completed
	want        int
	errors      int
	overlap     string
	digest      string
	notifs      int64
	messages    int64
	elections   int64
	expirations int64
}

func (o outcome) verdict() string {
	var v []string
	if o.overlap != "" {
		v = append(v, "mutual exclusion violated")
	}
	if o.done < o.want {
		v = append(v, "liveness violated")
	}
	if len(v) == 0 {
		return "ok"
	}
	return strings.Join(v, ", ")
}

// seededReader is a deterministic byte source for GUIDs.
type seededReader struct{ r *rand.Rand }

func (s seededReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(s.r.Uint32())
	}
	return len(p), nil
}

// play runs one workload with one seed inside its own bubble.
func play(t *testing.T, w workload, seed uint64) outcome {
	var out outcome
	// go-zookeeper draws its protected-name GUIDs from crypto/rand.
	cryptotest.SetGlobalRandom(t, seed)
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(w.cfg)
		start := time.Now()
		var mu sync.Mutex
		var wg sync.WaitGroup
		conns := make([]*zk.Conn, w.clients)
		lost := make([]bool, w.clients)
		for i := range conns {
			i := i
			c, _, err := e.Connect(fmt.Sprintf("c%d", i+1), i, w.sessionTimeout, func(ev zk.Event) {
				if ev.Type == zk.EventSession && (ev.State == zk.StateDisconnected || ev.State == zk.StateExpired) {
					mu.Lock()
					lost[i] = true
					mu.Unlock()
				}
			})
			if err != nil {
				panic(err)
			}
			conns[i] = c
		}
		out.want = w.clients * w.rounds
		app := &appControl{paused: map[int]bool{}}
		if w.plan != nil {
			prnd := rand.New(rand.NewPCG(seed, 0xfa17))
			wg.Add(1)
			go func() { defer wg.Done(); w.plan(e, prnd, app) }()
		}
		for i := range conns {
			i := i
			lrnd := rand.New(rand.NewPCG(seed, uint64(i)))
			l := w.newLock(conns[i], i, lrnd)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Clients start 1 ms apart, so nothing they draw depends on
				// which goroutine runs first.
				time.Sleep(time.Duration(i+1) * time.Millisecond)
				for r := 0; r < w.rounds && time.Since(start) < w.horizon; {
					if err := l.Lock(); err != nil {
						mu.Lock()
						out.errors++
						mu.Unlock()
						time.Sleep(100 * time.Millisecond)
						continue
					}
					mu.Lock()
					lost[i] = false
					h := hold{client: i + 1, start: time.Since(start)}
					mu.Unlock()
					// The critical section, in 10 ms steps so a holder that
					// stops on loss does so promptly.
					for d := time.Duration(0); d < w.hold || app.isPaused(i); d += 10 * time.Millisecond {
						time.Sleep(10 * time.Millisecond)
						if app.isPaused(i) {
							continue
						}
						mu.Lock()
						stop := w.stopOnLoss && lost[i]
						mu.Unlock()
						if stop {
							break
						}
					}
					mu.Lock()
					h.end = time.Since(start)
					out.holds = append(out.holds, h)
					out.done++
					mu.Unlock()
					l.Unlock()
					r++
				}
			}()
		}
		// The horizon: whoever still waits then is stuck.
		time.Sleep(w.horizon)
		// The digest is taken here: closing the clients races with their
		// own goroutines, which is no part of the run.
		out.digest = e.Digest()
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
		st := e.Stats()
		out.notifs, out.messages, out.elections, out.expirations = st.Notifications, st.Messages, st.Elections, st.SessionsExpired
		e.Stop()
	})
	out.overlap = findOverlap(out.holds)
	return out
}

// findOverlap names the first pair of holds by different clients that
// overlap in time.
func findOverlap(holds []hold) string {
	hs := append([]hold{}, holds...)
	sort.Slice(hs, func(i, j int) bool { return hs[i].start < hs[j].start })
	for i := range hs {
		for j := i + 1; j < len(hs) && hs[j].start < hs[i].end; j++ {
			if hs[j].client != hs[i].client {
				return fmt.Sprintf("c%d holds [%v, %v] and c%d holds [%v, %v]",
					hs[i].client, hs[i].start, hs[i].end, hs[j].client, hs[j].start, hs[j].end)
			}
		}
	}
	return ""
}
