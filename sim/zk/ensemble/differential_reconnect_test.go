package ensemble

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
)

// gate wraps a Dialer: the test can break the client's current connection
// and hold its reconnection until it opens the gate again.
type gate struct {
	mu   sync.Mutex
	dial zk.Dialer
	last net.Conn
	open chan struct{}
}

func newGate(d zk.Dialer) *gate {
	g := &gate{dial: d, open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	<-ch
	c, err := g.dial(network, addr, timeout)
	g.mu.Lock()
	g.last = c
	g.mu.Unlock()
	return c, err
}

// cut closes the current connection and holds the next dial.
func (g *gate) cut() {
	g.mu.Lock()
	g.open = make(chan struct{})
	c := g.last
	g.mu.Unlock()
	c.Close()
}

func (g *gate) release() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

// reconnectScript: c1 watches five things, loses its connection, c0
// changes all five while c1 cannot reconnect, then c1 comes back after
// `away`. Short of the session timeout, setWatches must deliver every
// change; beyond it, the session is gone and so are its ephemeral node and
// watches.
func reconnectScript(open func(i int, d func(zk.Dialer) zk.Dialer) *zk.Conn, root string, away time.Duration) []string {
	var out []string
	var g *gate
	c0 := open(0, nil)
	c1 := open(1, func(d zk.Dialer) zk.Dialer { g = newGate(d); return g.Dial })
	defer c0.Close()
	defer c1.Close()
	c0.Exists("/")
	c1.Exists("/")
	c0.Create(root, nil, 0, acl)
	c0.Create(root+"/a", []byte("1"), 0, acl)
	c0.Create(root+"/c", nil, 0, acl)
	c1.Create(root+"/mine", nil, zk.FlagEphemeral, acl)
	_, _, w0 := first3(c0.ExistsW(root + "/mine"))
	_, _, w1, _ := c1.GetW(root + "/a")
	_, _, w2, _ := c1.ExistsW(root + "/b")
	_, _, w3, _ := c1.ChildrenW(root)
	_, _, w4, _ := c1.GetW(root + "/c")
	sid := c1.SessionID()
	g.cut()
	for c1.State() == zk.StateHasSession {
		time.Sleep(time.Millisecond)
	}
	c0.Set(root+"/a", []byte("2"), -1)
	c0.Create(root+"/b", nil, 0, acl)
	c0.Delete(root+"/c", -1)
	time.Sleep(away)
	g.release()
	for i, w := range []<-chan zk.Event{w0, w1, w2, w3, w4} {
		select {
		case ev := <-w:
			msg := ""
			if ev.Err != nil {
				msg = ev.Err.Error()
			}
			out = append(out, fmt.Sprintf("watch %d: %s %s %s", i, ev.Type, strings.TrimPrefix(ev.Path, root), msg))
		case <-time.After(3 * time.Second):
			out = append(out, fmt.Sprintf("watch %d: nothing", i))
		}
	}
	ok, _, err := c0.Exists(root + "/mine")
	out = append(out, fmt.Sprintf("mine exists=%v %v; same session=%v", ok, err, c1.SessionID() == sid))
	return out
}

func first3(ok bool, st *zk.Stat, ch <-chan zk.Event, err error) (bool, *zk.Stat, <-chan zk.Event) {
	return ok, st, ch
}

// TestDifferentialZKReconnect compares reconnection with the real server:
// watches re-registered by setWatches, and an expired session's ephemeral
// node, watches and state.
func TestDifferentialZKReconnect(t *testing.T) {
	addr := realZK(t)
	for _, tc := range []struct {
		name string
		away time.Duration
	}{{"resume", 200 * time.Millisecond}, {"expire", 7 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			root := fmt.Sprintf("/r%d", diffSeq.Add(1))
			want := reconnectScript(func(i int, d func(zk.Dialer) zk.Dialer) *zk.Conn {
				var dial zk.Dialer = net.DialTimeout
				if d != nil {
					dial = d(dial)
				}
				c, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithDialer(dial), zk.WithLogger(quietLogger{}))
				if err != nil {
					t.Fatal(err)
				}
				return c
			}, root, tc.away)
			var got []string
			synctest.Test(t, func(t *testing.T) {
				e := New(Config{Servers: 3})
				defer e.Stop()
				got = reconnectScript(func(i int, d func(zk.Dialer) zk.Dialer) *zk.Conn {
					dial := zk.Dialer(e.Dialer(fmt.Sprintf("c%d", i)))
					if d != nil {
						dial = d(dial)
					}
					c, _, err := zk.Connect(e.Addrs(), 4*time.Second, zk.WithDialer(dial),
						zk.WithHostProvider(NewHostProvider(i)), zk.WithLogger(quietLogger{}))
					if err != nil {
						panic(err)
					}
					return c
				}, root, tc.away)
			})
			if d := firstDiff(want, got); d != "" {
				t.Fatalf("simulated ensemble differs from ZooKeeper 3.8:\n%s\nreal transcript:\n%s", d, strings.Join(want, "\n"))
			}
			t.Logf("transcript:\n%s", strings.Join(got, "\n"))
		})
	}
}
