package gozk

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/locklab/locklab/sim/zk/ensemble"
	"github.com/locklab/locklab/sim/zk/wire"
)

// queueAgainAfterLostDelete: the fixed queue's release loses its DELETE
// (the connection breaks), so the delete goes on in the background
// (guaranteedDelete) while the same client locks again at once, at
// GOMAXPROCS procs. It returns every frame the ensemble delivered.
func queueAgainAfterLostDelete(t *testing.T, procs int) string {
	var trace bytes.Buffer
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	synctest.Test(t, func(t *testing.T) {
		e := ensemble.New(ensemble.Config{Servers: 1})
		e.Trace = &trace
		defer e.Stop()
		c, _, err := e.Connect("c1", 0, 6*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		q := NewQueue(c, "/locks/x")
		q.Rand = strings.NewReader(strings.Repeat("\x42", 16) + strings.Repeat("\x43", 16))
		q.Settle = func() { e.Settle("c1") }
		defer q.Stop()
		if _, err := q.Lock(); err != nil {
			t.Fatal(err)
		}
		e.LoseNext("c1", wire.OpDelete, false)
		if err := q.Unlock(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Lock(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		q.Stop()
		c.Close()
	})
	return trace.String()
}

// TestQueueAgainAfterLostDeleteReplays: the background delete and the
// new Lock both fail at the reconnect (ErrNoServer, on one server) and
// both pause the same 100 ms backoff, so their retries fall due at one
// instant, in two goroutines. Without Queue.Settle, which of the DELETE
// and the lookup go-zookeeper sent first on the next connection changed
// from run to run (and with it whether the lookup saw the old node);
// with it the Lock's request goes first, every run.
func TestQueueAgainAfterLostDeleteReplays(t *testing.T) {
	first := queueAgainAfterLostDelete(t, 1)
	for i := 0; i < 30; i++ {
		if got := queueAgainAfterLostDelete(t, 1+i%2); got != first {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i, got, first)
		}
	}
	t.Log(first)
}
