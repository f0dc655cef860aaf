package ensemble

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"pgregory.net/rapid"
)

// The differential test: random sequences of client operations, the same
// ones through go-zookeeper/zk against the simulated ensemble and against
// a real ZooKeeper 3.8; the replies, the watch notifications after each
// step and the final znode tree must be identical, zxids included (taken
// relative to the sequence's root node, so failed writes and session
// transactions must consume zxids exactly as the real server does).

// dop is one step of a sequence.
type dop struct {
	Client  int
	Kind    string
	Path    string // relative to the sequence's root
	Path2   string
	Data    []byte
	Flags   int32
	Version int32
	Watch   bool
}

func (o dop) String() string {
	return fmt.Sprintf("c%d %s %s %s data=%q flags=%d v=%d w=%v", o.Client, o.Kind, o.Path, o.Path2, o.Data, o.Flags, o.Version, o.Watch)
}

var diffPaths = []string{"a", "b", "a/x", "a/y", "b/z", "s-", "a/s-", "c"}

func drawOps(t *rapid.T) []dop {
	n := rapid.IntRange(1, 25).Draw(t, "steps")
	ops := make([]dop, 0, n)
	kinds := []string{"create", "create", "create", "delete", "set", "get", "exists", "children", "multi", "reopen"}
	for i := 0; i < n; i++ {
		o := dop{
			Client:  rapid.IntRange(0, 1).Draw(t, "client"),
			Kind:    rapid.SampledFrom(kinds).Draw(t, "kind"),
			Path:    rapid.SampledFrom(diffPaths).Draw(t, "path"),
			Path2:   rapid.SampledFrom(diffPaths).Draw(t, "path2"),
			Data:    rapid.SampledFrom([][]byte{nil, {}, []byte("x1")}).Draw(t, "data"),
			Flags:   rapid.SampledFrom([]int32{0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeral | zk.FlagSequence}).Draw(t, "flags"),
			Version: rapid.SampledFrom([]int32{-1, 0, 1}).Draw(t, "version"),
			Watch:   rapid.Bool().Draw(t, "watch"),
		}
		ops = append(ops, o)
	}
	return ops
}

type watchReg struct {
	client int
	what   string
	ch     <-chan zk.Event
}

// runOps plays ops with two clients made by open and returns the
// transcript.
func runOps(open func(i int) *zk.Conn, root string, ops []dop) []string {
	var out []string
	// zk.Connect returns before the session exists; a first request waits
	// for it, so both sessions are made before the root (their
	// createSession transactions take zxids too).
	openReady := func(i int) *zk.Conn {
		c := open(i)
		c.Exists("/")
		return c
	}
	conns := []*zk.Conn{openReady(0), openReady(1)}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if _, err := conns[0].Create(root, nil, 0, acl); err != nil {
		return []string{"create root: " + err.Error()}
	}
	_, rst, err := conns[0].Exists(root)
	if err != nil {
		return []string{"stat root: " + err.Error()}
	}
	z0 := rst.Czxid
	owner := func(id int64) string {
		for i, c := range conns {
			if c.SessionID() == id {
				return fmt.Sprintf("c%d", i)
			}
		}
		if id == 0 {
			return "-"
		}
		return "old-session"
	}
	rel := func(z int64) int64 {
		if z == 0 {
			return 0
		}
		return z - z0
	}
	stat := func(s *zk.Stat) string {
		if s == nil {
			return "nil"
		}
		return fmt.Sprintf("{czx=%d mzx=%d pzx=%d v=%d cv=%d nc=%d dl=%d owner=%s}",
			rel(s.Czxid), rel(s.Mzxid), rel(s.Pzxid), s.Version, s.Cversion, s.NumChildren, s.DataLength, owner(s.EphemeralOwner))
	}
	strip := func(p string) string { return strings.TrimPrefix(p, root) }
	errs := func(err error) string {
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	data := func(b []byte) string {
		if b == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", b)
	}
	var watches []watchReg
	for i, o := range ops {
		c := conns[o.Client]
		p := root + "/" + o.Path
		var res string
		switch o.Kind {
		case "create":
			got, err := c.Create(p, o.Data, o.Flags, acl)
			res = strip(got) + " " + errs(err)
		case "delete":
			res = errs(c.Delete(p, o.Version))
		case "set":
			s, err := c.Set(p, o.Data, o.Version)
			if err != nil {
				s = nil
			}
			res = stat(s) + " " + errs(err)
		case "get":
			if o.Watch {
				d, s, ch, err := c.GetW(p)
				if err == nil {
					watches = append(watches, watchReg{o.Client, "data " + o.Path, ch})
				}
				res = data(d) + " " + stat(s) + " " + errs(err)
			} else {
				d, s, err := c.Get(p)
				if err != nil {
					d, s = nil, nil
				}
				res = data(d) + " " + stat(s) + " " + errs(err)
			}
		case "exists":
			if o.Watch {
				ok, s, ch, err := c.ExistsW(p)
				if err == nil {
					watches = append(watches, watchReg{o.Client, "exists " + o.Path, ch})
				}
				if !ok {
					s = nil
				}
				res = fmt.Sprintf("%v %s %s", ok, stat(s), errs(err))
			} else {
				ok, s, err := c.Exists(p)
				if !ok {
					s = nil
				}
				res = fmt.Sprintf("%v %s %s", ok, stat(s), errs(err))
			}
		case "children":
			var kids []string
			var s *zk.Stat
			var err error
			if o.Watch {
				var ch <-chan zk.Event
				kids, s, ch, err = c.ChildrenW(p)
				if err == nil {
					watches = append(watches, watchReg{o.Client, "child " + o.Path, ch})
				}
			} else {
				kids, s, err = c.Children(p)
			}
			if err != nil {
				s = nil
			}
			sort.Strings(kids)
			res = fmt.Sprintf("%v %s %s", kids, stat(s), errs(err))
		case "multi":
			mr, err := c.Multi(
				&zk.CreateRequest{Path: p, Data: o.Data, Acl: acl, Flags: o.Flags},
				&zk.CheckVersionRequest{Path: root + "/" + o.Path2, Version: o.Version},
				&zk.SetDataRequest{Path: root + "/" + o.Path2, Data: []byte("m"), Version: -1},
			)
			var parts []string
			for _, r := range mr {
				parts = append(parts, fmt.Sprintf("[%s %s %s]", strip(r.String), stat(r.Stat), errs(r.Error)))
			}
			res = strings.Join(parts, "") + " " + errs(err)
		case "reopen":
			c.Close()
			kept := watches[:0]
			for _, w := range watches {
				if w.client != o.Client {
					kept = append(kept, w)
				}
			}
			watches = kept
			conns[o.Client] = openReady(o.Client)
			res = "reopened"
		}
		out = append(out, fmt.Sprintf("%d %s -> %s", i, o, res))
		// Barrier: a request on each connection is answered after every
		// notification the step caused on that connection.
		for _, bc := range conns {
			bc.Exists("/")
		}
		var evs []string
		kept := watches[:0]
		for _, w := range watches {
			select {
			case ev := <-w.ch:
				evs = append(evs, fmt.Sprintf("  event c%d %s: %s %s", w.client, w.what, ev.Type, strip(ev.Path)))
			default:
				kept = append(kept, w)
			}
		}
		watches = kept
		sort.Strings(evs)
		out = append(out, evs...)
	}
	// The final tree, walked through the client.
	var walk func(string)
	walk = func(p string) {
		d, s, err := conns[0].Get(p)
		if err != nil {
			out = append(out, "tree "+strip(p)+" "+err.Error())
			return
		}
		out = append(out, fmt.Sprintf("tree %s %s %s", strip(p), data(d), stat(s)))
		kids, _, _ := conns[0].Children(p)
		sort.Strings(kids)
		for _, k := range kids {
			walk(p + "/" + k)
		}
	}
	walk(root)
	return out
}

var diffSeq atomic.Int64

// TestDifferentialZKOperations compares the simulated ensemble (1, 3 or 5
// servers; the two clients on different servers) with a real standalone
// ZooKeeper 3.8 on random two-client sequences.
func TestDifferentialZKOperations(t *testing.T) {
	addr := realZK(t)
	rapid.Check(t, func(rt *rapid.T) {
		ops := drawOps(rt)
		// What a client sees must not depend on the ensemble's size.
		servers := rapid.SampledFrom([]int{1, 3, 5}).Draw(rt, "servers")
		root := fmt.Sprintf("/d%d", diffSeq.Add(1))
		want := runOps(func(i int) *zk.Conn {
			c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietLogger{}))
			if err != nil {
				rt.Fatalf("connect to real ZooKeeper: %v", err)
			}
			return c
		}, root, ops)
		var got []string
		synctest.Test(t, func(t *testing.T) {
			e := New(Config{Servers: servers})
			defer e.Stop()
			got = runOps(func(i int) *zk.Conn {
				c, _, err := e.Connect(fmt.Sprintf("c%d", i), i, 10*time.Second, nil)
				if err != nil {
					panic(err)
				}
				return c
			}, root, ops)
		})
		if d := firstDiff(want, got); d != "" {
			if dir := os.Getenv("LOCKLAB_ZK_DIFF_DIR"); dir != "" {
				os.WriteFile(filepath.Join(dir, "real.txt"), []byte(strings.Join(want, "\n")), 0o644)
				os.WriteFile(filepath.Join(dir, "sim.txt"), []byte(strings.Join(got, "\n")), 0o644)
			}
			rt.Fatalf("simulated ensemble differs from ZooKeeper 3.8:\n%s", d)
		}
	})
}

func firstDiff(want, got []string) string {
	for i := 0; i < len(want) || i < len(got); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			ctx := strings.Join(want[max(0, i-3):i], "\n")
			return fmt.Sprintf("%s\nreal: %s\nsim:  %s", ctx, w, g)
		}
	}
	return ""
}

var _ = errors.Is
