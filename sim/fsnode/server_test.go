package fsnode

import (
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/faults"
)

func lockReq(client string, epoch int, xid uint64, ino uint64, reclaim bool) Request {
	return Request{Client: client, Epoch: epoch, XID: xid, Op: OpLock, Ino: ino, Reclaim: reclaim,
		Lock: Lock{Ino: ino, Kind: Posix, Owner: client + "/101", Excl: true}}
}

// A lease renewed by nothing ends on the server's clock, and another
// client then gets the lock; the first learns NFS4ERR_EXPIRED.
func TestLeaseExpiryDropsLocks(t *testing.T) {
	s := NewServer(NewFS(), 10*time.Second, 10*time.Second, true)
	var expired []ServerEvent
	s.OnEvent = func(e ServerEvent) { expired = append(expired, e) }
	e := s.Handle(0, Request{Client: "c1", Op: OpSetClientID}).Epoch
	s.Handle(0, Request{Client: "c2", Op: OpSetClientID})
	ino := s.Handle(time.Second, Request{Client: "c1", Epoch: e, XID: 1, Op: OpCreate, Name: "lock"}).Ino
	if r := s.Handle(time.Second, lockReq("c1", e, 2, ino, false)); r.Err != nil {
		t.Fatal(r.Err)
	}
	for at := 2 * time.Second; at < 11*time.Second; at += 3 * time.Second { // c2's traffic renews c2 only
		if r := s.Handle(at, lockReq("c2", e, uint64(at), ino, false)); !errors.Is(r.Err, ErrWouldBlock) {
			t.Fatalf("at %v c2 got %v while c1's lease runs", at, r.Err)
		}
	}
	if r := s.Handle(11*time.Second+1, lockReq("c2", e, 99, ino, false)); r.Err != nil {
		t.Fatalf("after c1's lease ended c2 got %v", r.Err)
	}
	if len(expired) != 1 || expired[0].Client != "c1" || expired[0].Count != 1 {
		t.Fatalf("expiry events %+v", expired)
	}
	if r := s.Handle(12*time.Second, Request{Client: "c1", Epoch: e, XID: 3, Op: OpRenew}); !errors.Is(r.Err, ErrExpired) {
		t.Fatalf("c1's RENEW after expiry: %v", r.Err)
	}
}

// After a restart: stale client IDs, reclaims only in the grace period,
// new locks only after it.
func TestRestartGracePeriod(t *testing.T) {
	s := NewServer(NewFS(), 10*time.Second, 5*time.Second, true)
	e := s.Handle(0, Request{Client: "c1", Op: OpSetClientID}).Epoch
	ino := s.Handle(0, Request{Client: "c1", Epoch: e, XID: 1, Op: OpCreate, Name: "lock"}).Ino
	s.Handle(0, lockReq("c1", e, 2, ino, false))
	s.Restart(time.Second)
	if r := s.Handle(2*time.Second, Request{Client: "c1", Epoch: e, XID: 3, Op: OpRenew}); !errors.Is(r.Err, ErrStaleClientID) {
		t.Fatalf("old client ID after restart: %v", r.Err)
	}
	e2 := s.Handle(2*time.Second, Request{Client: "c2", Op: OpSetClientID}).Epoch
	if r := s.Handle(2*time.Second, lockReq("c2", e2, 1, ino, false)); !errors.Is(r.Err, ErrGrace) {
		t.Fatalf("new lock in the grace period: %v", r.Err)
	}
	if r := s.Handle(7*time.Second, lockReq("c2", e2, 2, ino, true)); !errors.Is(r.Err, ErrNoGrace) {
		t.Fatalf("reclaim after the grace period: %v", r.Err)
	}
	if r := s.Handle(7*time.Second, lockReq("c2", e2, 3, ino, false)); r.Err != nil {
		t.Fatalf("new lock after the grace period: %v", r.Err)
	}
}

// A retransmitted exclusive CREATE (same XID) whose first reply was lost:
// with the duplicate-request cache the creator gets its own success back;
// without it the create runs again and the creator reads EEXIST.
func TestRetransmittedCreate(t *testing.T) {
	for _, drc := range []bool{true, false} {
		s := NewServer(NewFS(), time.Minute, time.Minute, drc)
		e := s.Handle(0, Request{Client: "c1", Op: OpSetClientID}).Epoch
		req := Request{Client: "c1", Epoch: e, XID: 7, Op: OpCreate, Name: "lock", Excl: true}
		if r := s.Handle(0, req); r.Err != nil {
			t.Fatal(r.Err)
		}
		r := s.Handle(time.Second, req)
		if drc && (r.Err != nil || !r.Replayed) {
			t.Errorf("with the cache: %v replayed=%v", r.Err, r.Replayed)
		}
		if !drc && !errors.Is(r.Err, ErrExist) {
			t.Errorf("without the cache: %v, want EEXIST", r.Err)
		}
	}
}

// Every op the server answers is one a fault schedule may name.
func TestOpsAreInTheFaultVocabulary(t *testing.T) {
	for _, op := range []string{OpSetClientID, OpRenew, OpCreate, OpLookup, OpLink, OpRemove, OpGetattr, OpRead, OpWrite, OpLock, OpLocku} {
		if !faults.KnownOp(op) {
			t.Errorf("%s is not in faults.NFSOps", op)
		}
	}
}
