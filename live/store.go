package live

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// store is the protected resource of a live run: one counter (items in
// stock) in the harness, reached through the fabric as the host "store",
// so a partition or a drop rule can cut a client from it as in a
// simulated run. Its fencing rules are sim.Inventory's (sim/resource.go):
// with fencing on, it remembers the highest token seen and turns away
// older ones, reads included; under ">" a token writes once.
type store struct {
	mu      sync.Mutex
	value   int64
	initial int64
	rule    string
	highest int64
	written map[int64]bool
	log     []checker.Access
	fabric  *fabric
	clock   func() time.Duration
	// wait is how long a client waits for the store's reply (sim.Inventory's
	// Timeout).
	wait time.Duration
	// inflight counts messages to and from the store still on their way.
	inflight *sync.WaitGroup
	// reliable spares the store's traffic from the network's faults
	// (resource.reliable), as a simulated run does.
	reliable bool
}

var errStoreTimeout = errors.New("store: no reply")

// errStale is a read refused for a stale fencing token.
var errStale = errors.New("rejected: stale fencing token")

// call carries one request and its reply through the fabric. The client
// waits at most the store's timeout (on its running time) for the reply;
// a request held up in the network still lands when it arrives, after the
// client gave up (Kleppmann's delayed packet), and the run waits for it
// before it ends (inflight).
func (s *store) call(c *clientHost, op string, do func() any) (any, error) {
	reply := make(chan any, 1)
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		pass := s.fabric.pass
		if s.reliable {
			pass = func(message) fate { return fate{} }
		}
		in := pass(message{from: c.Name, to: scenarios.ResourceHost, op: op, dir: "request"})
		if in.drop {
			return
		}
		time.Sleep(in.delay)
		r := do()
		out := pass(message{from: scenarios.ResourceHost, to: c.Name, op: op, dir: "reply"})
		if out.drop {
			return
		}
		time.Sleep(out.delay)
		reply <- r
	}()
	start, pausedThen := time.Now(), c.pausedTotal()
	for {
		left := s.wait - c.runningSince(start, pausedThen)
		if left <= 0 {
			c.checkpoint(true)
			return nil, errStoreTimeout
		}
		select {
		case r := <-reply:
			c.checkpoint(true)
			return r, nil
		case <-time.After(left):
		}
	}
}

func (s *store) fenced() bool { return s.rule == ">" || s.rule == ">=" }

func (s *store) stale(fence int64) string {
	if !s.fenced() || fence >= s.highest {
		return ""
	}
	return fmt.Sprintf("token %d is lower than %d", fence, s.highest)
}

func (s *store) compared(fence int64) int64 {
	if !s.fenced() || fence == 0 {
		return 0
	}
	return s.highest
}

func (s *store) see(fence int64) {
	if s.fenced() && fence > s.highest {
		s.highest = fence
	}
}

// read returns the stock under fencing token fence.
func (s *store) read(c *clientHost, fence int64) (int64, error) {
	r, err := s.call(c, "READ", func() any {
		s.mu.Lock()
		defer s.mu.Unlock()
		a := checker.Access{Seq: len(s.log) + 1, At: s.clock(), Client: c.Name, Kind: "read", Value: s.value, FencingToken: fence, Highest: s.compared(fence), Accepted: true}
		if why := s.stale(fence); why != "" {
			a.Accepted, a.Reason = false, why
			s.log = append(s.log, a)
			return nil
		}
		s.see(fence)
		s.log = append(s.log, a)
		return s.value
	})
	if err != nil {
		return 0, err
	}
	if r == nil {
		return 0, errStale
	}
	return r.(int64), nil
}

// write stores value, computed from a read of based, under token fence.
func (s *store) write(c *clientHost, value, based, fence int64) (bool, error) {
	r, err := s.call(c, "WRITE", func() any {
		s.mu.Lock()
		defer s.mu.Unlock()
		a := checker.Access{Seq: len(s.log) + 1, At: s.clock(), Client: c.Name, Kind: "write", Value: value, Based: based, FencingToken: fence, Highest: s.compared(fence), Accepted: true}
		if why := s.stale(fence); why != "" {
			a.Accepted, a.Reason = false, why
		} else if s.rule == ">" && s.written[fence] {
			a.Accepted, a.Reason = false, fmt.Sprintf("token %d has already written", fence)
		}
		s.log = append(s.log, a)
		if !a.Accepted {
			return false
		}
		s.value = value
		s.see(fence)
		if s.written == nil {
			s.written = map[int64]bool{}
		}
		s.written[fence] = true
		return true
	})
	if err != nil {
		return false, err
	}
	return r.(bool), nil
}
