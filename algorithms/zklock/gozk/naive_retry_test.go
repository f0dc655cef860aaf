package gozk

import (
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/sim/zk/ensemble"
	"github.com/locklab/locklab/sim/zk/wire"
)

// TestNaiveRecreateGoesOnNextConnection pins the race behind
// zk-lost-create-reply's rare second trace. The naive recipe's lookup
// fails with ErrConnectionClosed when go-zookeeper's connection loop
// flushes its requests; the loop then goes on to connect and, back round
// to its only server, fails every unsent request with ErrNoServer. Our
// event callback runs on the loop goroutine between the two (setState
// StateConnecting) and yields there, so a create queued at once would be
// the one failed by that flush, the retried lookup would find our node,
// and there would be no orphan. The recipe must pause first: its second
// create goes out on the next connection, and it queues behind its own
// orphan.
func TestNaiveRecreateGoesOnNextConnection(t *testing.T) {
	for round := 0; round < 5; round++ {
		synctest.Test(t, func(t *testing.T) {
			e := ensemble.New(ensemble.Config{Servers: 1})
			defer e.Stop()
			yield := func(ev zk.Event) {
				if ev.Type == zk.EventSession && ev.State == zk.StateConnecting {
					for i := 0; i < 20; i++ {
						runtime.Gosched()
					}
				}
			}
			c, _, err := e.Connect("c1", 0, 6*time.Second, yield)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			q := NewQueue(c, "/locks/x")
			q.Naive = true
			q.Rand = strings.NewReader(strings.Repeat("\x42", 16))
			defer q.Stop()
			if err := q.makeParents(); err != nil {
				t.Fatal(err)
			}
			e.LoseNext("c1", wire.OpCreate, true)
			e.LoseNext("c1", wire.OpGetChildren2, true)
			got := make(chan string, 1)
			go func() {
				path, _ := q.Lock()
				got <- path
			}()
			time.Sleep(5 * time.Second)
			select {
			case path := <-got:
				t.Fatalf("round %d: naive Lock returned %q: its second create was failed with ErrNoServer by go-zookeeper's reconnect and the retried lookup adopted the first node; want a second node queued behind the orphan", round, path)
			default:
			}
			kids, _, err := c.Children("/locks/x")
			if err != nil {
				t.Fatal(err)
			}
			if len(kids) != 2 {
				t.Fatalf("round %d: children %v, want the orphan and the second node", round, kids)
			}
			q.Stop()
			c.Close()
			<-got
		})
	}
}
