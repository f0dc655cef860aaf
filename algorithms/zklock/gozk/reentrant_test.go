package gozk

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
)

// TestReentrant: the owner re-enters without a second node; the node goes
// only with the last release; another client waits until then; releasing
// what one does not hold is an error.
func TestReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(ensemble.Config{})
		defer e.Stop()
		c1, _, _ := e.Connect("c1", 0, 6*time.Second, nil)
		defer c1.Close()
		c2, _, _ := e.Connect("c2", 1, 6*time.Second, nil)
		defer c2.Close()
		r1, r2 := NewReentrant(c1, "/locks/r"), NewReentrant(c2, "/locks/r")
		defer r1.Queue.Stop()
		defer r2.Queue.Stop()
		for i := 0; i < 3; i++ {
			if err := r1.Lock("job-a"); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(e.Committed("/locks/r")) - 1; n != 1 || r1.Holds("job-a") != 3 {
			t.Fatalf("%d nodes, held %d times; want one node held 3 times", n, r1.Holds("job-a"))
		}
		if err := r1.Unlock("job-b"); !errors.Is(err, zk.ErrNotLocked) {
			t.Fatalf("release by another owner: %v", err)
		}
		if err := r1.Lock("job-b"); !errors.Is(err, zk.ErrDeadlock) {
			t.Fatalf("acquire by another owner of the same handle: %v", err)
		}
		got := make(chan time.Time, 1)
		go func() {
			if err := r2.Lock("other"); err == nil {
				got <- time.Now()
			}
		}()
		time.Sleep(time.Second)
		r1.Unlock("job-a")
		r1.Unlock("job-a")
		time.Sleep(time.Second)
		select {
		case <-got:
			t.Fatal("the other client got the lock before the last release")
		default:
		}
		released := time.Now()
		r1.Unlock("job-a")
		if at := <-got; at.Sub(released) > 50*time.Millisecond {
			t.Fatalf("the other client got the lock %v after the last release", at.Sub(released))
		}
		if err := r1.Unlock("job-a"); !errors.Is(err, zk.ErrNotLocked) {
			t.Fatalf("one release too many: %v", err)
		}
		r2.Unlock("other")
	})
}
