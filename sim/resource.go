package sim

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/checker"
)

// FenceRule is how the protected resource treats fencing tokens.
type FenceRule string

const (
	// FenceNone accepts every write: the resource trusts the lock.
	FenceNone FenceRule = "none"
	// FenceGreater accepts a write only if its token is higher than every
	// token accepted before (Kleppmann's rule).
	FenceGreater FenceRule = ">"
	// FenceGreaterEqual also accepts a token equal to the highest seen, which
	// lets two clients holding the same token both write.
	FenceGreaterEqual FenceRule = ">="
)

// Inventory is the protected resource: a storage service on its own host
// holding one counter (items in stock). The critical section reads it, works,
// and writes it back minus one, so a lost update shows as stock that was sold
// twice but only decremented once. It records every access in the order it
// executed them, which is what the resource check reads.
type Inventory struct {
	Host    *Host
	Value   int64
	Initial int64
	Rule    FenceRule
	Highest int64
	Log     []checker.Access
	// Timeout is how long clients wait for the service's reply.
	Timeout time.Duration

	w *World
}

// NewInventory starts the resource service on a host called name.
func (w *World) NewInventory(name string, initial int64, rule FenceRule) *Inventory {
	if rule == "" {
		rule = FenceNone
	}
	return &Inventory{Host: w.NewHost(name, nil), Value: initial, Initial: initial, Rule: rule, Timeout: time.Second, w: w}
}

// Read returns the stock as the service sees it when the request arrives.
func (inv *Inventory) Read(p *Process) (int64, error) {
	r, err := p.Call(inv.Host.Name, "READ", "READ stock", inv.Timeout, func() (any, string) {
		inv.Log = append(inv.Log, checker.Access{Seq: len(inv.Log) + 1, At: inv.w.now, Client: p.Host.Name, Kind: "read", Value: inv.Value, Accepted: true})
		return inv.Value, fmt.Sprint(inv.Value)
	})
	if err != nil {
		return 0, err
	}
	return r.(int64), nil
}

// Write stores value, which the client computed from a read of based, with
// fencing token fence (0 for none). It reports whether the service accepted it.
func (inv *Inventory) Write(p *Process, value, based, fence int64) (bool, error) {
	summary := fmt.Sprintf("WRITE stock=%d", value)
	if fence != 0 {
		summary += fmt.Sprintf(" token=%d", fence)
	}
	r, err := p.Call(inv.Host.Name, "WRITE", summary, inv.Timeout, func() (any, string) {
		a := checker.Access{Seq: len(inv.Log) + 1, At: inv.w.now, Client: p.Host.Name, Kind: "write", Value: value, Based: based, Fence: fence, Accepted: true}
		switch {
		case inv.Rule == FenceGreater && fence <= inv.Highest:
			a.Accepted, a.Reason = false, fmt.Sprintf("token %d is not greater than %d", fence, inv.Highest)
		case inv.Rule == FenceGreaterEqual && fence < inv.Highest:
			a.Accepted, a.Reason = false, fmt.Sprintf("token %d is lower than %d", fence, inv.Highest)
		}
		inv.Log = append(inv.Log, a)
		if !a.Accepted {
			return false, "rejected: " + a.Reason
		}
		inv.Value = value
		if fence > inv.Highest {
			inv.Highest = fence
		}
		return true, "ok"
	})
	if err != nil {
		return false, err
	}
	return r.(bool), nil
}
