package gozk

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
	"github.com/locklab/locklab/sim/zk/wire"
)

// TestSemaphoreLostLeaseCreateReply: the reply to the lease's create is
// lost (the node was made). Curator's InterProcessSemaphoreV2 creates
// the lease withProtection(): the retry finds the node by its GUID and
// adopts it, so the acquire succeeds with one lease node. Unprotected,
// the acquire failed and left that node behind, an orphan of the live
// session holding the semaphore's one permit.
func TestSemaphoreLostLeaseCreateReply(t *testing.T) {
	r := windowRecipes[slicesIndex(t, "gozk-semaphore")]
	got := windowOutcome(t, r, lostReply(wire.OpCreate), false)
	want := `acquire: "/locks/x/leases/_c_<guid>-lease-0000000000", <nil>; nodes: /locks/x/leases /locks/x/leases/_c_<guid>-lease-0000000000 /locks/x/locks`
	if got != want {
		t.Fatalf("after a lost lease-create reply:\n got  %s\n want %s", got, want)
	}
}

func slicesIndex(t *testing.T, name string) int {
	for i, r := range windowRecipes {
		if r.name == name {
			return i
		}
	}
	t.Fatalf("no window recipe %s", name)
	return -1
}

// releaseAfterLostDelete takes a hold with acquire on a one-server
// ensemble, loses the next DELETE of c1 (its request, or with reply its
// reply: then it took effect), releases, and says 5 s later what the
// release returned and which nodes are left under /locks/x.
func releaseAfterLostDelete(t *testing.T, reply bool, acquire func(c *zk.Conn, e *ensemble.Ensemble) (release func() error, stop func(), err error)) string {
	var out string
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(ensemble.Config{Servers: 1})
		defer e.Stop()
		c, _, err := e.Connect("c1", 0, 6*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, p := range []string{"/locks", "/locks/x"} {
			if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatal(err)
			}
		}
		release, stop, err := acquire(c, e)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		e.LoseNext("c1", wire.OpDelete, reply)
		rerr := release()
		time.Sleep(5 * time.Second)
		out = fmt.Sprintf("release: %v; nodes: %s", rerr, strings.Join(tree(t, c, "/locks/x"), " "))
		out = guid.ReplaceAllString(out, "_c_<guid>-")
		stop()
		c.Close()
	})
	return out
}

// TestReleaseLostDelete: a release whose DELETE goes unanswered — the
// request lost (the node stays) or its reply lost (the node went) — must
// still return the hold: the delete is guaranteed (Curator's
// guaranteed(), retried in the background), the release reports success,
// and 5 s later no node of ours is left. Deleted once, the lost request
// left the node, and with it the permit or the lock, to the live session,
// and both losses made the release fail.
func TestReleaseLostDelete(t *testing.T) {
	recipes := []struct {
		name    string
		want    string
		acquire func(c *zk.Conn, e *ensemble.Ensemble) (func() error, func(), error)
	}{
		{"gozk-semaphore", "release: <nil>; nodes: /locks/x/leases /locks/x/locks", func(c *zk.Conn, e *ensemble.Ensemble) (func() error, func(), error) {
			s := NewSemaphore(c, "/locks/x", 1)
			s.Rand = strings.NewReader(strings.Repeat("\x42", 32))
			s.Settle = func() { e.Settle("c1") }
			s.Mutex.Settle = s.Settle
			_, err := s.Acquire()
			return s.Release, s.Stop, err
		}},
		{"gozk-rwlock", "release: <nil>; nodes: ", func(c *zk.Conn, e *ensemble.Ensemble) (func() error, func(), error) {
			l := NewRWLock(c, "/locks/x", false)
			l.Rand = strings.NewReader(strings.Repeat("\x42", 16))
			l.Settle = func() { e.Settle("c1") }
			_, err := l.Lock()
			return l.Unlock, l.Stop, err
		}},
	}
	for _, r := range recipes {
		for _, reply := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reply=%v", r.name, reply), func(t *testing.T) {
				if got := releaseAfterLostDelete(t, reply, r.acquire); got != r.want {
					t.Fatalf("after a lost DELETE:\n got  %s\n want %s", got, r.want)
				}
			})
		}
	}
}
