package sim

import (
	"runtime"
	"testing"
	"time"
)

func runSetGet(t *testing.T, seed uint64) (string, []string) {
	w := New(seed)
	node := w.NewRedisNode("A", nil)
	var got []string
	for i, name := range []string{"c1", "c2", "c3"} {
		h := w.NewHost(name, nil)
		cl := node.NewClient(h, ClientOptions{})
		h.Spawn(name, time.Duration(i)*time.Millisecond, func(p *Process) {
			ctx := p.Context()
			for j := 0; j < 3; j++ {
				ok, err := cl.SetNX(ctx, "lock", p.Name, 100*time.Millisecond).Result()
				if err != nil {
					t.Errorf("setnx: %v", err)
				}
				if ok {
					got = append(got, p.Name)
					p.Sleep(20 * time.Millisecond)
					cl.Del(ctx, "lock")
				}
				p.Sleep(time.Duration(p.Rand().Int64N(int64(10 * time.Millisecond))))
			}
		})
	}
	if err := w.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return w.Trace.SHA256(), got
}

func TestKernelSmoke(t *testing.T) {
	before := runtime.NumGoroutine()
	a, got := runSetGet(t, 1)
	b, _ := runSetGet(t, 1)
	c, _ := runSetGet(t, 2)
	if a != b {
		t.Fatalf("same seed, different traces: %s %s", a, b)
	}
	if a == c {
		t.Fatalf("different seeds, same trace")
	}
	if len(got) == 0 {
		t.Fatalf("nobody acquired")
	}
	t.Logf("acquired: %v", got)
	time.Sleep(50 * time.Millisecond)
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("goroutines: %d before, %d after\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
