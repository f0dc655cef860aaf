package etcdnode

// Applying committed log entries: every member applies every entry in log
// order to its own key space and lessor; the member that proposed an entry
// answers its client. Entries carry etcd's own InternalRaftRequest, so a
// log holds what a real etcd's log would.

import (
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/locklab/locklab/sim/event"
)

var (
	errNoLeader = rpctypes.ErrGRPCNoLeader
	errTimeout  = rpctypes.ErrGRPCTimeout
	// etcd turns a dropped proposal into this error (its errors package's
	// ErrStopped and friends all end as codes.Unavailable/Unknown); the
	// client does not retry a mutation on it.
	errLeaseExists = rpctypes.ErrGRPCLeaseExist
	errLeaseGone   = rpctypes.ErrGRPCLeaseNotFound
	errTooLarge    = status.Error(codes.InvalidArgument, "etcdserver: too many operations in txn request")
)

func (m *Member) applyEntry(e *raftpb.Entry) {
	switch e.GetType() {
	case raftpb.EntryType_EntryConfChange:
		var cc raftpb.ConfChange
		if err := proto.Unmarshal(e.Data, &cc); err == nil {
			m.node.ApplyConfChange(&cc)
		}
		return
	case raftpb.EntryType_EntryConfChangeV2:
		var cc raftpb.ConfChangeV2
		if err := proto.Unmarshal(e.Data, &cc); err == nil {
			m.node.ApplyConfChange(&cc)
		}
		return
	}
	if len(e.Data) == 0 {
		// The empty entry a new leader appends: once it applies it, the
		// leader's lessor is promoted (etcd's applyEntryNormal).
		if m.isLeader() {
			extend := time.Duration(m.c.cfg.ElectionTicks) * m.c.cfg.TickInterval
			m.lessor.promote(m.clock(), extend)
			m.c.w.Record(m.Name, event.Event{Kind: event.EtcdLeasePromoted, Node: m.Name, Count: len(m.lessor.leases), Delay: extend})
		}
		return
	}
	var r pb.InternalRaftRequest
	if err := proto.Unmarshal(e.Data, &r); err != nil {
		return
	}
	resp, err := m.execute(&r)
	if p := m.pending[r.ID]; p != nil {
		delete(m.pending, r.ID)
		p.timer.Cancel()
		p.done(resp, err)
	}
}

// header is the response header this member puts on an answer.
func (m *Member) header() *pb.ResponseHeader {
	return &pb.ResponseHeader{ClusterId: m.c.clusterID, MemberId: m.ID, Revision: m.kv.rev, RaftTerm: m.term()}
}

// execute applies one request; its response carries this member's header.
func (m *Member) execute(r *pb.InternalRaftRequest) (any, error) {
	switch {
	case r.Range != nil:
		resp, err := m.kv.rangeKeys(r.Range)
		if err != nil {
			return nil, err
		}
		resp.Header = m.header()
		return resp, nil
	case r.Put != nil:
		t := m.kv.begin()
		resp, err := m.put(t, r.Put)
		if err != nil {
			return nil, err
		}
		m.commit(t)
		resp.Header = m.header()
		return resp, nil
	case r.DeleteRange != nil:
		t := m.kv.begin()
		resp := m.deleteRange(t, r.DeleteRange)
		m.commit(t)
		resp.Header = m.header()
		return resp, nil
	case r.Txn != nil:
		t := m.kv.begin()
		resp, err := m.txn(t, r.Txn)
		if err != nil {
			return nil, err
		}
		m.commit(t)
		setHeaders(resp, m.header())
		return resp, nil
	case r.LeaseGrant != nil:
		if m.lessor.leases[r.LeaseGrant.ID] != nil {
			return nil, errLeaseExists
		}
		ttl := max(r.LeaseGrant.TTL, m.c.minTTL())
		m.lessor.grant(r.LeaseGrant.ID, ttl, m.clock())
		return &pb.LeaseGrantResponse{Header: m.header(), ID: r.LeaseGrant.ID, TTL: ttl}, nil
	case r.LeaseRevoke != nil:
		if !m.revoke(r.LeaseRevoke.ID) {
			return nil, errLeaseGone
		}
		return &pb.LeaseRevokeResponse{Header: m.header()}, nil
	}
	return nil, status.Error(codes.Unimplemented, "etcdnode: request not modelled")
}

// commit ends a write transaction and shows its events to the watchers
// served by this member.
func (m *Member) commit(t *writeTxn) {
	evs := t.commit()
	if len(evs) > 0 {
		m.notifyWatchers(evs)
	}
}

func (m *Member) put(t *writeTxn, r *pb.PutRequest) (*pb.PutResponse, error) {
	old := m.kv.keys[string(r.Key)]
	value, leaseID := r.Value, r.Lease
	if r.IgnoreValue || r.IgnoreLease {
		if old == nil {
			return nil, rpctypes.ErrGRPCKeyNotFound
		}
		if r.IgnoreValue {
			value = old.Value
		}
		if r.IgnoreLease {
			leaseID = old.Lease
		}
	}
	if leaseID != 0 && m.lessor.leases[leaseID] == nil {
		return nil, errLeaseGone
	}
	prev := t.put(r.Key, value, leaseID)
	if prev != nil && prev.Lease != 0 && prev.Lease != leaseID {
		if ls := m.lessor.leases[prev.Lease]; ls != nil {
			delete(ls.keys, string(r.Key))
		}
	}
	if leaseID != 0 {
		m.lessor.leases[leaseID].keys[string(r.Key)] = true
	}
	resp := &pb.PutResponse{}
	if r.PrevKv && prev != nil {
		resp.PrevKv = cloneKV(prev)
	}
	return resp, nil
}

func (m *Member) deleteRange(t *writeTxn, r *pb.DeleteRangeRequest) *pb.DeleteRangeResponse {
	gone := t.del(r.Key, r.RangeEnd)
	resp := &pb.DeleteRangeResponse{Deleted: int64(len(gone))}
	for _, kv := range gone {
		if ls := m.lessor.leases[kv.Lease]; kv.Lease != 0 && ls != nil {
			delete(ls.keys, string(kv.Key))
		}
		if r.PrevKv {
			resp.PrevKvs = append(resp.PrevKvs, cloneKV(kv))
		}
	}
	return resp
}

// txn runs a transaction: its compares decide the branch, whose operations
// run in order, each seeing the writes before it, all at one revision.
func (m *Member) txn(t *writeTxn, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	ok := true
	for _, c := range r.Compare {
		if !m.kv.compare(c) {
			ok = false
			break
		}
	}
	ops := r.Failure
	if ok {
		ops = r.Success
	}
	if len(ops) > 128 {
		return nil, errTooLarge
	}
	resp := &pb.TxnResponse{Succeeded: ok}
	for _, op := range ops {
		out := &pb.ResponseOp{}
		switch x := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			rr, err := m.kv.rangeKeys(x.RequestRange)
			if err != nil {
				return nil, err
			}
			out.Response = &pb.ResponseOp_ResponseRange{ResponseRange: rr}
		case *pb.RequestOp_RequestPut:
			pr, err := m.put(t, x.RequestPut)
			if err != nil {
				return nil, err
			}
			out.Response = &pb.ResponseOp_ResponsePut{ResponsePut: pr}
		case *pb.RequestOp_RequestDeleteRange:
			out.Response = &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: m.deleteRange(t, x.RequestDeleteRange)}
		case *pb.RequestOp_RequestTxn:
			tr, err := m.txn(t, x.RequestTxn)
			if err != nil {
				return nil, err
			}
			out.Response = &pb.ResponseOp_ResponseTxn{ResponseTxn: tr}
		}
		resp.Responses = append(resp.Responses, out)
	}
	return resp, nil
}

// setHeaders gives a transaction's response, and those nested in it, the
// header (etcd fills every nested response's header).
func setHeaders(resp *pb.TxnResponse, h *pb.ResponseHeader) {
	resp.Header = h
	for _, op := range resp.Responses {
		switch x := op.Response.(type) {
		case *pb.ResponseOp_ResponseRange:
			x.ResponseRange.Header = h
		case *pb.ResponseOp_ResponsePut:
			x.ResponsePut.Header = h
		case *pb.ResponseOp_ResponseDeleteRange:
			x.ResponseDeleteRange.Header = h
		case *pb.ResponseOp_ResponseTxn:
			setHeaders(x.ResponseTxn, h)
		}
	}
}

// revoke deletes a lease and its keys at one revision; it reports whether
// the lease existed.
func (m *Member) revoke(id int64) bool {
	ls := m.lessor.leases[id]
	if ls == nil {
		return false
	}
	t := m.kv.begin()
	var keys []string
	for k := range ls.keys {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		t.del([]byte(k), nil)
	}
	delete(m.lessor.leases, id)
	m.commit(t)
	for _, w := range ls.waiting {
		w(0, nil)
	}
	if m.isLeader() {
		m.c.w.Record(m.Name, event.Event{Kind: event.EtcdLeaseRevoked, Node: m.Name, Session: leaseName(id), Keys: len(keys), Offset: m.kv.rev})
	}
	return true
}

func leaseName(id int64) string { return fmt.Sprintf("%x", id) }

// revokeExpired is the leader's expiry check (etcd's lessor runLoop looks
// every 500 ms): each lease past its expiry on the leader's clock is
// revoked through the log, the way any client's revoke would be.
func (m *Member) revokeExpired() {
	if !m.isLeader() || !m.lessor.primary {
		return
	}
	now := m.clock()
	for _, ls := range m.lessor.expired(now) {
		ls.revoking = true
		m.c.w.Record(m.Name, event.Event{Kind: event.EtcdLeaseExpired, Node: m.Name, Session: leaseName(ls.id), Clock: now})
		id := m.nextID()
		data, _ := proto.Marshal(&pb.InternalRaftRequest{ID: id, LeaseRevoke: &pb.LeaseRevokeRequest{ID: ls.id}})
		lsID := ls.id
		m.propose(data, id, func(any, error) {
			// A revoke that timed out (leadership lost meanwhile) is tried
			// again at the next check if this member still leads.
			if cur := m.lessor.leases[lsID]; cur != nil {
				cur.revoking = false
			}
		})
	}
}

// renew is a keep-alive on the leader: the lease's expiry moves to a full
// TTL from now on the leader's clock. An expired lease is not renewed: the
// answer waits for its revoke (TTL 0) or for a demotion (etcd's
// lessor.Renew).
func (m *Member) renew(id int64, done func(ttl int64, err error)) {
	ls := m.lessor.leases[id]
	switch {
	case !m.isLeader() || !m.lessor.primary:
		done(0, errNoLeader)
	case ls == nil:
		done(0, nil)
	case ls.expiry <= m.clock():
		ls.waiting = append(ls.waiting, done)
	default:
		ls.expiry = m.clock() + time.Duration(ls.ttl)*time.Second
		done(ls.ttl, nil)
	}
}
