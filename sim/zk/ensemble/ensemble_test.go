package ensemble

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
)

var acl = zk.WorldACL(zk.PermAll)

// must ends the test (by panicking inside the bubble) on an error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
	return v
}

// TestClientOperations drives an unmodified go-zookeeper client through
// every operation the lock recipes use and checks each reply.
func TestClientOperations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Config{Servers: 3})
		defer e.Stop()
		c, _, err := e.Connect("c1", 0, 6*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		if p := must(c.Create("/a", []byte("x"), 0, acl)); p != "/a" {
			t.Fatalf("create /a = %q", p)
		}
		if _, err := c.Create("/a", nil, 0, acl); !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("second create /a: %v, want ErrNodeExists", err)
		}
		if _, err := c.Create("/missing/b", nil, 0, acl); !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("create under missing parent: %v, want ErrNoNode", err)
		}
		p1 := must(c.Create("/a/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl))
		p2 := must(c.Create("/a/lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl))
		if p1 != "/a/lock-0000000000" || p2 != "/a/lock-0000000001" {
			t.Fatalf("sequential names %q %q", p1, p2)
		}
		if _, err := c.Create(p1+"/child", nil, 0, acl); !errors.Is(err, zk.ErrNoChildrenForEphemerals) {
			t.Fatalf("child of ephemeral: %v", err)
		}
		kids, st, err := c.Children("/a")
		if err != nil || strings.Join(kids, ",") != "lock-0000000000,lock-0000000001" || st.NumChildren != 2 || st.Cversion != 2 {
			t.Fatalf("children = %v %+v %v", kids, st, err)
		}
		data, st, err := c.Get("/a")
		if err != nil || string(data) != "x" || st.Version != 0 {
			t.Fatalf("get = %q %+v %v", data, st, err)
		}
		if _, err := c.Set("/a", []byte("y"), 5); !errors.Is(err, zk.ErrBadVersion) {
			t.Fatalf("set with wrong version: %v", err)
		}
		st = must(c.Set("/a", []byte("y"), 0))
		if st.Version != 1 || st.DataLength != 1 {
			t.Fatalf("set stat %+v", st)
		}
		if err := c.Delete("/a", -1); !errors.Is(err, zk.ErrNotEmpty) {
			t.Fatalf("delete non-empty: %v", err)
		}
		if err := c.Delete(p1, 3); !errors.Is(err, zk.ErrBadVersion) {
			t.Fatalf("delete wrong version: %v", err)
		}
		if err := c.Delete(p1, 0); err != nil {
			t.Fatal(err)
		}
		ok, _, err := c.Exists(p1)
		if ok || err != nil {
			t.Fatalf("exists after delete: %v %v", ok, err)
		}
		// Protected names, as the Lock recipe makes them. The suffix counts
		// children ever created (two), not the current child version.
		pp := must(c.CreateProtectedEphemeralSequential("/a/lock-", nil, acl))
		if !strings.HasPrefix(pp, "/a/_c_") || !strings.HasSuffix(pp, "-lock-0000000002") {
			t.Fatalf("protected path %q", pp)
		}
		// Multi: all or nothing.
		_, err = c.Multi(&zk.CreateRequest{Path: "/m1", Acl: acl}, &zk.DeleteRequest{Path: "/nope", Version: -1})
		if !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("failing multi: %v", err)
		}
		if ok, _, _ := c.Exists("/m1"); ok {
			t.Fatal("failed multi left /m1 behind")
		}
		res, err := c.Multi(&zk.CreateRequest{Path: "/m1", Acl: acl}, &zk.SetDataRequest{Path: "/m1", Data: []byte("d"), Version: 0})
		if err != nil || res[0].String != "/m1" || res[1].Stat.Version != 1 {
			t.Fatalf("multi = %+v %v", res, err)
		}
	})
}

// TestWatches: data, exists and child watches fire once, to every
// watching session, and a reset connection re-registers them.
func TestWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Config{Servers: 3})
		defer e.Stop()
		a, _, _ := e.Connect("ca", 0, 6*time.Second, nil)
		b, _, _ := e.Connect("cb", 1, 6*time.Second, nil)
		defer a.Close()
		defer b.Close()
		must(a.Create("/w", nil, 0, acl))
		_, _, dw := must3(t)(b.GetW("/w"))
		_, _, cw, err := b.ChildrenW("/w")
		if err != nil {
			t.Fatal(err)
		}
		_, _, ew, err := b.ExistsW("/w/new")
		if err != nil {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		must(a.Set("/w", []byte("1"), -1))
		if ev := <-dw; ev.Type != zk.EventNodeDataChanged || ev.Path != "/w" {
			t.Fatalf("data watch: %+v", ev)
		}
		// The client's connection breaks; the watches survive through
		// setWatches on the reconnect.
		e.Drop("cb")
		time.Sleep(100 * time.Millisecond)
		must(a.Create("/w/new", nil, 0, acl))
		if ev := <-ew; ev.Type != zk.EventNodeCreated || ev.Path != "/w/new" {
			t.Fatalf("exists watch: %+v", ev)
		}
		if ev := <-cw; ev.Type != zk.EventNodeChildrenChanged || ev.Path != "/w" {
			t.Fatalf("child watch: %+v", ev)
		}
		if b.State() != zk.StateHasSession {
			t.Fatalf("b state %v", b.State())
		}
	})
}

func must3(t *testing.T) func([]byte, *zk.Stat, <-chan zk.Event, error) ([]byte, *zk.Stat, <-chan zk.Event) {
	return func(d []byte, s *zk.Stat, ch <-chan zk.Event, err error) ([]byte, *zk.Stat, <-chan zk.Event) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d, s, ch
	}
}
