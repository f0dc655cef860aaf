package etcdnode

// The key space of one member: etcd's MVCC store as its clients see it.
// Every write transaction raises the store's revision by one; a key keeps
// the revision that created it (CreateRevision), the one that last changed
// it (ModRevision) and how many times it was written since its creation
// (Version); a deleted key is gone, and its next put starts a new
// generation (Version 1, a new CreateRevision). The history of events is
// kept whole (this model never compacts), so a watch may start at any past
// revision.

import (
	"bytes"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

type store struct {
	rev     int64
	keys    map[string]*mvccpb.KeyValue
	history []*mvccpb.Event // every event, in revision order
}

func newStore() *store { return &store{rev: 1, keys: map[string]*mvccpb.KeyValue{}} }

// inRange says whether key lies in the range [key, end) a request names:
// no end is the key alone, end "\x00" every key from key on.
func inRange(k, key, end []byte) bool {
	switch {
	case len(end) == 0:
		return bytes.Equal(k, key)
	case len(end) == 1 && end[0] == 0:
		return bytes.Compare(k, key) >= 0
	default:
		return bytes.Compare(k, key) >= 0 && bytes.Compare(k, end) < 0
	}
}

// live lists the keys of a range now, sorted by key.
func (s *store) live(key, end []byte) []*mvccpb.KeyValue {
	var out []*mvccpb.KeyValue
	if len(end) == 0 {
		if kv := s.keys[string(key)]; kv != nil {
			out = append(out, kv)
		}
		return out
	}
	for k, kv := range s.keys {
		if inRange([]byte(k), key, end) {
			out = append(out, kv)
		}
	}
	slices.SortFunc(out, func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

// at lists the keys of a range as they were at revision rev, from the
// history.
func (s *store) at(key, end []byte, rev int64) []*mvccpb.KeyValue {
	state := map[string]*mvccpb.KeyValue{}
	for _, ev := range s.history {
		if ev.Kv.ModRevision > rev {
			break
		}
		if !inRange(ev.Kv.Key, key, end) {
			continue
		}
		if ev.Type == mvccpb.Event_DELETE {
			delete(state, string(ev.Kv.Key))
		} else {
			state[string(ev.Kv.Key)] = ev.Kv
		}
	}
	out := make([]*mvccpb.KeyValue, 0, len(state))
	for _, kv := range state {
		out = append(out, kv)
	}
	slices.SortFunc(out, func(a, b *mvccpb.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

// rangeKeys answers a RangeRequest the way etcd's apply does: the range at
// the revision asked for, filtered by the min/max revisions, sorted, cut at
// the limit; Count is the number of keys in the range before the filters.
func (s *store) rangeKeys(r *pb.RangeRequest) (*pb.RangeResponse, error) {
	var kvs []*mvccpb.KeyValue
	switch {
	case r.Revision > s.rev:
		return nil, rpctypes.ErrGRPCFutureRev
	case r.Revision > 0 && r.Revision < s.rev:
		kvs = s.at(r.Key, r.RangeEnd, r.Revision)
	default:
		kvs = s.live(r.Key, r.RangeEnd)
	}
	resp := &pb.RangeResponse{Count: int64(len(kvs))}
	kvs = slices.DeleteFunc(kvs, func(kv *mvccpb.KeyValue) bool {
		return (r.MinModRevision > 0 && kv.ModRevision < r.MinModRevision) ||
			(r.MaxModRevision > 0 && kv.ModRevision > r.MaxModRevision) ||
			(r.MinCreateRevision > 0 && kv.CreateRevision < r.MinCreateRevision) ||
			(r.MaxCreateRevision > 0 && kv.CreateRevision > r.MaxCreateRevision)
	})
	sortKeys(kvs, r.SortTarget, r.SortOrder)
	if r.Limit > 0 && int64(len(kvs)) > r.Limit {
		kvs = kvs[:r.Limit]
		resp.More = true
	}
	if r.CountOnly {
		return resp, nil
	}
	for _, kv := range kvs {
		c := cloneKV(kv)
		if r.KeysOnly {
			c.Value = nil
		}
		resp.Kvs = append(resp.Kvs, c)
	}
	return resp, nil
}

// sortKeys orders kvs as etcd does: by the target field, ascending unless
// told otherwise; a target without an order ascends (etcd's v3 server
// turns SortTarget != KEY with SortOrder NONE into ASCEND).
func sortKeys(kvs []*mvccpb.KeyValue, target pb.RangeRequest_SortTarget, order pb.RangeRequest_SortOrder) {
	if order == pb.RangeRequest_NONE && target != pb.RangeRequest_KEY {
		order = pb.RangeRequest_ASCEND
	}
	if order == pb.RangeRequest_NONE {
		return
	}
	field := func(kv *mvccpb.KeyValue) int64 {
		switch target {
		case pb.RangeRequest_VERSION:
			return kv.Version
		case pb.RangeRequest_CREATE:
			return kv.CreateRevision
		case pb.RangeRequest_MOD:
			return kv.ModRevision
		}
		return 0
	}
	cmpKV := func(a, b *mvccpb.KeyValue) int {
		var c int
		switch target {
		case pb.RangeRequest_KEY:
			c = bytes.Compare(a.Key, b.Key)
		case pb.RangeRequest_VALUE:
			c = bytes.Compare(a.Value, b.Value)
		default:
			x, y := field(a), field(b)
			switch {
			case x < y:
				c = -1
			case x > y:
				c = 1
			}
		}
		if order == pb.RangeRequest_DESCEND {
			c = -c
		}
		return c
	}
	slices.SortStableFunc(kvs, cmpKV)
}

func cloneKV(kv *mvccpb.KeyValue) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: kv.Key, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision, Version: kv.Version, Value: kv.Value, Lease: kv.Lease}
}

// writeTxn is one write transaction: every change it makes carries the
// revision after the store's current one, which it takes only if it
// changed something.
type writeTxn struct {
	s       *store
	changed bool
	events  []*mvccpb.Event
}

func (s *store) begin() *writeTxn { return &writeTxn{s: s} }

func (t *writeTxn) rev() int64 { return t.s.rev + 1 }

func (t *writeTxn) put(key, value []byte, lease int64) (prev *mvccpb.KeyValue) {
	s := t.s
	old := s.keys[string(key)]
	kv := &mvccpb.KeyValue{Key: key, Value: value, Lease: lease, ModRevision: t.rev(), CreateRevision: t.rev(), Version: 1}
	if old != nil {
		kv.CreateRevision, kv.Version = old.CreateRevision, old.Version+1
	}
	s.keys[string(key)] = kv
	t.changed = true
	t.events = append(t.events, &mvccpb.Event{Type: mvccpb.Event_PUT, Kv: kv, PrevKv: old})
	return old
}

func (t *writeTxn) del(key, end []byte) []*mvccpb.KeyValue {
	gone := t.s.live(key, end)
	for _, kv := range gone {
		delete(t.s.keys, string(kv.Key))
		t.changed = true
		t.events = append(t.events, &mvccpb.Event{Type: mvccpb.Event_DELETE, Kv: &mvccpb.KeyValue{Key: kv.Key, ModRevision: t.rev()}, PrevKv: kv})
	}
	return gone
}

// commit ends the transaction: the revision rises if anything changed,
// and the events join the history. It returns the events.
func (t *writeTxn) commit() []*mvccpb.Event {
	if t.changed {
		t.s.rev++
		t.s.history = append(t.s.history, t.events...)
	}
	return t.events
}

// compare evaluates one Compare of a Txn against the store as the
// transaction sees it. A missing key compares as zero for the revision,
// version and lease targets and fails a value compare (etcd's
// applyCompare).
func (s *store) compare(c *pb.Compare) bool {
	kvs := s.live(c.Key, c.RangeEnd)
	if len(kvs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false
		}
		return compareOne(&mvccpb.KeyValue{}, c)
	}
	for _, kv := range kvs {
		if !compareOne(kv, c) {
			return false
		}
	}
	return true
}

func compareOne(kv *mvccpb.KeyValue, c *pb.Compare) bool {
	var r int
	switch c.Target {
	case pb.Compare_VALUE:
		r = bytes.Compare(kv.Value, c.GetValue())
	case pb.Compare_VERSION:
		r = cmpInt(kv.Version, c.GetVersion())
	case pb.Compare_CREATE:
		r = cmpInt(kv.CreateRevision, c.GetCreateRevision())
	case pb.Compare_MOD:
		r = cmpInt(kv.ModRevision, c.GetModRevision())
	case pb.Compare_LEASE:
		r = cmpInt(kv.Lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return r == 0
	case pb.Compare_NOT_EQUAL:
		return r != 0
	case pb.Compare_GREATER:
		return r > 0
	case pb.Compare_LESS:
		return r < 0
	}
	return false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
