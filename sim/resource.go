package sim

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/checker"
)

// FenceRule is how the protected resource treats fencing tokens. With
// either rule the resource remembers the highest token seen on any access
// and turns away older ones, reads included: a client that read the stock
// under an older token than one already seen would compute its write from a
// stale value.
type FenceRule string

const (
	// FenceNone accepts everything: the resource trusts the lock.
	FenceNone FenceRule = "none"
	// FenceGreater is Kleppmann's rule: a token lower than the highest seen
	// is rejected, and so is a second write under a token that has already
	// written (only the first holder of a token can win).
	FenceGreater FenceRule = ">"
	// FenceGreaterEqual rejects only lower tokens, so two clients handed the
	// same token (a counter that went backwards) both get their writes in.
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
	written map[int64]bool // tokens that have written (for ">")
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

// ErrStaleToken is a read refused because a higher fencing token was seen.
var ErrStaleToken = fmt.Errorf("rejected: stale fencing token")

// stale reports why an access with token fence must be refused, or "".
func (inv *Inventory) stale(fence int64) string {
	if inv.Rule == FenceNone || fence >= inv.Highest {
		return ""
	}
	return fmt.Sprintf("token %d is lower than %d", fence, inv.Highest)
}

// compared is the highest token an access with token fence is compared
// against (0 when the store does not fence or the access has no token).
func (inv *Inventory) compared(fence int64) int64 {
	if inv.Rule == FenceNone || fence == 0 {
		return 0
	}
	return inv.Highest
}

func (inv *Inventory) see(fence int64) {
	if inv.Rule != FenceNone && fence > inv.Highest {
		inv.Highest = fence
	}
}

// Read returns the stock as the service sees it when the request arrives,
// under fencing token fence (0 for none).
func (inv *Inventory) Read(p *Process, fence int64) (int64, error) {
	summary := "READ stock"
	if fence != 0 {
		summary += fmt.Sprintf(" token=%d", fence)
	}
	r, err := p.Call(inv.Host.Name, "READ", summary, inv.Timeout, func() (any, string) {
		a := checker.Access{Seq: len(inv.Log) + 1, At: inv.w.now, Client: p.Host.Name, Kind: "read", Value: inv.Value, FencingToken: fence, Highest: inv.compared(fence), Accepted: true}
		if why := inv.stale(fence); why != "" {
			a.Accepted, a.Reason = false, why
			inv.Log = append(inv.Log, a)
			return nil, "rejected: " + why
		}
		inv.see(fence)
		inv.Log = append(inv.Log, a)
		return inv.Value, fmt.Sprint(inv.Value)
	})
	if err != nil {
		return 0, err
	}
	if r == nil {
		return 0, ErrStaleToken
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
		a := checker.Access{Seq: len(inv.Log) + 1, At: inv.w.now, Client: p.Host.Name, Kind: "write", Value: value, Based: based, FencingToken: fence, Highest: inv.compared(fence), Accepted: true}
		if why := inv.stale(fence); why != "" {
			a.Accepted, a.Reason = false, why
		} else if inv.Rule == FenceGreater && inv.written[fence] {
			a.Accepted, a.Reason = false, fmt.Sprintf("token %d has already written", fence)
		}
		inv.Log = append(inv.Log, a)
		if !a.Accepted {
			return false, "rejected: " + a.Reason
		}
		inv.Value = value
		inv.see(fence)
		if inv.written == nil {
			inv.written = map[int64]bool{}
		}
		inv.written[fence] = true
		return true, "ok"
	})
	if err != nil {
		return false, err
	}
	return r.(bool), nil
}
