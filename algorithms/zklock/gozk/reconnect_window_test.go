package gozk

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
	"github.com/locklab/locklab/sim/zk/wire"
)

// The reconnect window. When a connection breaks, go-zookeeper's loop
// (v1.0.4, Conn.loop) fails every request awaiting a reply
// (flushRequests, ErrConnectionClosed), which wakes their callers, and
// goes straight on to connect(). Back round to the server it last used —
// always, on a one-server ensemble — it fails every request queued but not
// yet sent (flushUnsentRequests, ErrNoServer) and waits a second. A
// caller that sends again at once, without sleeping, races that flush:
// queued before it, its request fails with ErrNoServer; after it, it goes
// out on the next connection. Neither goroutine passes through the
// simulation's kernel in between, so the Go scheduler picks, and the run's
// trace with it. The event callback runs on the loop goroutine between the
// two flushes (setState(StateConnecting)); yielding there puts the caller
// first, not yielding mostly puts the loop first. A recipe is
// deterministic across the window when both give the same outcome.
//
// go-zookeeper's own Lock (its protected create lists the children at
// once after a lost create reply) and the semaphore and rwlock recipes
// (which delete their node at once when a listing fails) all raced it;
// the library is not ours to change, so the ensemble closes the window
// for every caller: its HostProvider settles the bubble before it says
// retryStart (sim/zk/ensemble/reconnect.go). Without that, these tests
// fail for gozk-lock (a lost create reply: acquired, or ErrNoServer with
// an orphan) and for gozk-semaphore and gozk-rwlock (a lost listing: the
// node deleted, or left behind).

// windowRecipe is one recipe under the window: lock runs its acquire on c
// (the ensemble's one client, c1) and calls arm where the fault should
// begin to watch for its request.
type windowRecipe struct {
	name string
	lock func(c *zk.Conn, arm func()) (string, error)
}

var windowRecipes = []windowRecipe{
	{"gozk-simple", func(c *zk.Conn, arm func()) (string, error) {
		arm()
		return "", NewSimple(c, "/locks/x/lock").Lock()
	}},
	{"gozk-lock", func(c *zk.Conn, arm func()) (string, error) {
		arm()
		return "", zk.NewLock(c, "/locks/x", zk.WorldACL(zk.PermAll)).Lock()
	}},
	{"gozk-queue", func(c *zk.Conn, arm func()) (string, error) {
		arm()
		q := NewQueue(c, "/locks/x")
		q.Rand = strings.NewReader(strings.Repeat("\x42", 16))
		return q.Lock()
	}},
	{"gozk-semaphore", func(c *zk.Conn, arm func()) (string, error) {
		// Acquire's steps, with the fault armed once the counting mutex
		// is held: the window is on the lease's own requests.
		s := NewSemaphore(c, "/locks/x", 1)
		if _, err := c.Create(s.leases(), nil, 0, s.ACL); err != nil {
			return "", err
		}
		s.Mutex.Rand = strings.NewReader(strings.Repeat("\x42", 16))
		if _, err := s.Mutex.Lock(); err != nil {
			return "", err
		}
		arm()
		path, err := s.take()
		if uerr := s.Mutex.Unlock(); err == nil {
			err = uerr
		}
		return path, err
	}},
	{"gozk-rwlock", func(c *zk.Conn, arm func()) (string, error) {
		arm()
		return NewRWLock(c, "/locks/x", false).Lock()
	}},
}

// guid hides go-zookeeper's own protected names' GUIDs (zk.Lock draws
// them from crypto/rand).
var guid = regexp.MustCompile(`_c_[0-9a-f]{32}-`)

// lostReply loses the reply to c1's next request with op code op (the
// request took effect; the connection breaks).
func lostReply(op int32) func(e *ensemble.Ensemble) {
	return func(e *ensemble.Ensemble) { e.LoseNext("c1", op, true) }
}

// windowOutcome runs recipe's acquire on a one-server ensemble, fault
// armed where the recipe says, with the reconnect window forced open
// (yield) or not, and says what came of it 20 s later: the acquire's
// result, then every node under /locks/x.
func windowOutcome(t *testing.T, r windowRecipe, fault func(e *ensemble.Ensemble), yield bool) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(ensemble.Config{Servers: 1})
		defer e.Stop()
		cb := func(ev zk.Event) {
			if yield && ev.Type == zk.EventSession && ev.State == zk.StateConnecting {
				for i := 0; i < 20; i++ {
					runtime.Gosched()
				}
			}
		}
		c, _, err := e.Connect("c1", 0, 6*time.Second, cb)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, p := range []string{"/locks", "/locks/x"} {
			if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		arm := func() { fault(e) }
		type result struct {
			path string
			err  error
		}
		got := make(chan result, 1)
		go func() {
			path, err := r.lock(c, arm)
			got <- result{path, err}
		}()
		time.Sleep(20 * time.Second)
		select {
		case res := <-got:
			out = fmt.Sprintf("acquire: %q, %v", res.path, res.err)
		default:
			out = "acquire: still waiting"
		}
		out += "; nodes: " + strings.Join(tree(t, c, "/locks/x"), " ")
		out = guid.ReplaceAllString(out, "_c_<guid>-")
		c.Close()
	})
	return out
}

// tree lists every node under dir, depth first, names sorted.
func tree(t *testing.T, c *zk.Conn, dir string) []string {
	kids, _, err := c.Children(dir)
	if err != nil {
		t.Fatalf("children of %s: %v", dir, err)
	}
	slices.Sort(kids)
	var out []string
	for _, k := range kids {
		out = append(out, dir+"/"+k)
		out = append(out, tree(t, c, dir+"/"+k)...)
	}
	return out
}

// TestReconnectWindowLostCreateReply: the reply to a recipe's first
// create is lost. Whatever the recipe does next, it must do it the same
// way whether go-zookeeper's loop or the recipe gets there first.
func TestReconnectWindowLostCreateReply(t *testing.T) {
	for _, r := range windowRecipes {
		t.Run(r.name, func(t *testing.T) {
			loopFirst := windowOutcome(t, r, lostReply(wire.OpCreate), false)
			for round := 0; round < 3; round++ {
				if callerFirst := windowOutcome(t, r, lostReply(wire.OpCreate), true); callerFirst != loopFirst {
					t.Fatalf("round %d: the outcome depends on the Go scheduler:\n  loop first:   %s\n  caller first: %s", round, loopFirst, callerFirst)
				}
			}
			t.Log(loopFirst)
		})
	}
}

// TestReconnectWindowLostListReply: the reply to the recipe's first
// listing of the lock's children (GETCHILDREN2) is lost.
func TestReconnectWindowLostListReply(t *testing.T) {
	for _, r := range windowRecipes {
		if r.name == "gozk-simple" {
			continue // it lists nothing (it watches its one node)
		}
		t.Run(r.name, func(t *testing.T) {
			loopFirst := windowOutcome(t, r, lostReply(wire.OpGetChildren2), false)
			for round := 0; round < 3; round++ {
				if callerFirst := windowOutcome(t, r, lostReply(wire.OpGetChildren2), true); callerFirst != loopFirst {
					t.Fatalf("round %d: the outcome depends on the Go scheduler:\n  loop first:   %s\n  caller first: %s", round, loopFirst, callerFirst)
				}
			}
			t.Log(loopFirst)
		})
	}
}

// TestReconnectWindowSessionExpires: c1's host stops (a long GC pause, a
// frozen VM) for 10 s just as the recipe starts, past its 6 s session
// timeout. go-zookeeper's read timeout breaks the connection while the
// host is stopped, the server expires the session and its ephemeral
// nodes, and the reconnect after the pause learns so (Expired): the
// requests the recipe sends again around that reconnect must meet the
// same fate whichever goroutine runs first. (Suspected, not found: this
// test passes without the ensemble's settle too. go-zookeeper v1.0.4 only
// fails requests with ErrSessionExpired that were sent on the connection
// whose handshake said Expired, and it sends none before the handshake,
// so Queue.create's ErrSessionExpired branch, which creates again at once,
// is not reached here; the requests queued meanwhile fail with
// ErrNoServer or go out in the new session. It stays as a guard.)
func TestReconnectWindowSessionExpires(t *testing.T) {
	pause := func(e *ensemble.Ensemble) {
		e.Pause("c1")
		go func() {
			time.Sleep(10 * time.Second)
			e.Resume("c1")
		}()
	}
	for _, r := range windowRecipes {
		t.Run(r.name, func(t *testing.T) {
			loopFirst := windowOutcome(t, r, pause, false)
			for round := 0; round < 3; round++ {
				if callerFirst := windowOutcome(t, r, pause, true); callerFirst != loopFirst {
					t.Fatalf("round %d: the outcome depends on the Go scheduler:\n  loop first:   %s\n  caller first: %s", round, loopFirst, callerFirst)
				}
			}
			t.Log(loopFirst)
		})
	}
}
