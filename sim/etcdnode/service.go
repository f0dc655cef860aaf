package etcdnode

// The gRPC services a member serves (etcdserverpb's KV, Lease and Watch),
// the part clientv3 and its concurrency package use. Reads and writes go
// through the raft log (a linearizable Range is answered once the member
// has applied everything committed before it, which is what etcd's
// ReadIndex gives); a serializable Range is answered from the member's own
// key space. Lease renewals and TTL questions go to the leader, as etcd
// forwards them.

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

type kvService struct {
	pb.UnimplementedKVServer
	m *Member
}

type leaseService struct {
	pb.UnimplementedLeaseServer
	m *Member
}

// logged proposes req and answers once this member applied it; it records
// the answer as an etcd.applied event.
func (m *Member) logged(ctx context.Context, op, key string, req *pb.InternalRaftRequest, summary func(any) string) (any, error) {
	client := clientOf(ctx)
	return m.call(ctx, op, req, func(reply func(any, error)) {
		id := m.nextID()
		req.ID = id
		req.Header = &pb.RequestHeader{ID: id}
		data, err := proto.Marshal(req)
		if err != nil {
			reply(nil, status.Error(codes.InvalidArgument, err.Error()))
			return
		}
		m.propose(data, id, func(resp any, err error) {
			ev := event.Event{Kind: event.EtcdApplied, Node: m.Name, Client: client, Op: op, Key: key, Offset: m.kv.rev}
			if err != nil {
				ev.Reply = status.Convert(err).Message()
			} else {
				ev.Reply = summary(resp)
			}
			m.c.w.Record(m.Name, ev)
			reply(resp, err)
		})
	})
}

func (s *kvService) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if r.Serializable {
		resp, err := s.m.call(ctx, "Range", r, func(reply func(any, error)) {
			rr, err := s.m.kv.rangeKeys(r)
			if err == nil {
				rr.Header = s.m.header()
			}
			reply(rr, err)
		})
		if err != nil {
			return nil, err
		}
		return resp.(*pb.RangeResponse), nil
	}
	resp, err := s.m.logged(ctx, "Range", string(r.Key), &pb.InternalRaftRequest{Range: r}, func(a any) string {
		return countSummary(len(a.(*pb.RangeResponse).Kvs))
	})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.RangeResponse), nil
}

func countSummary(n int) string {
	if n == 1 {
		return "1 key"
	}
	return itoa(n) + " keys"
}

func (s *kvService) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	resp, err := s.m.logged(ctx, "Put", string(r.Key), &pb.InternalRaftRequest{Put: r}, func(any) string { return "ok" })
	if err != nil {
		return nil, err
	}
	return resp.(*pb.PutResponse), nil
}

func (s *kvService) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp, err := s.m.logged(ctx, "DeleteRange", string(r.Key), &pb.InternalRaftRequest{DeleteRange: r}, func(a any) string {
		return "deleted " + itoa(int(a.(*pb.DeleteRangeResponse).Deleted))
	})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.DeleteRangeResponse), nil
}

func (s *kvService) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	key := ""
	if len(r.Compare) > 0 {
		key = string(r.Compare[0].Key)
	}
	resp, err := s.m.logged(ctx, "Txn", key, &pb.InternalRaftRequest{Txn: r}, func(a any) string {
		if a.(*pb.TxnResponse).Succeeded {
			return "succeeded"
		}
		return "failed"
	})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.TxnResponse), nil
}

func (s *leaseService) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	m := s.m
	resp, err := m.call(ctx, "LeaseGrant", r, func(reply func(any, error)) {
		req := &pb.LeaseGrantRequest{TTL: r.TTL, ID: r.ID}
		if req.ID == 0 {
			// etcd picks the id on the member that got the request.
			req.ID = int64(m.nextID() & (1<<63 - 1))
		}
		id := m.nextID()
		data, _ := proto.Marshal(&pb.InternalRaftRequest{ID: id, Header: &pb.RequestHeader{ID: id}, LeaseGrant: req})
		client := clientOf(ctx)
		m.propose(data, id, func(resp any, err error) {
			ev := event.Event{Kind: event.EtcdApplied, Node: m.Name, Client: client, Op: "LeaseGrant", Session: leaseName(req.ID), Offset: m.kv.rev}
			if err != nil {
				ev.Reply = status.Convert(err).Message()
			} else {
				ev.Reply = "ttl " + itoa(int(resp.(*pb.LeaseGrantResponse).TTL))
			}
			m.c.w.Record(m.Name, ev)
			reply(resp, err)
		})
	})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseGrantResponse), nil
}

func (s *leaseService) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	resp, err := s.m.logged(ctx, "LeaseRevoke", "", &pb.InternalRaftRequest{LeaseRevoke: r}, func(any) string { return "ok" })
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseRevokeResponse), nil
}

func (s *leaseService) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	m := s.m
	resp, err := m.call(ctx, "LeaseTimeToLive", r, func(reply func(any, error)) {
		m.atLeader("LeaseTimeToLive", clientOf(ctx), func(l *Member, done func(any, error)) {
			ls := l.lessor.leases[r.ID]
			out := &pb.LeaseTimeToLiveResponse{Header: l.header(), ID: r.ID, TTL: -1}
			if ls != nil {
				out.TTL, out.GrantedTTL = ls.remaining(l.clock()), ls.ttl
				if r.Keys {
					for _, k := range sortedKeys(ls.keys) {
						out.Keys = append(out.Keys, []byte(k))
					}
				}
			}
			done(out, nil)
		}, reply)
	})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseTimeToLiveResponse), nil
}

func (s *leaseService) LeaseLeases(ctx context.Context, r *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	m := s.m
	resp, err := m.call(ctx, "LeaseLeases", r, func(reply func(any, error)) {
		out := &pb.LeaseLeasesResponse{Header: m.header()}
		for _, id := range m.lessor.ids() {
			out.Leases = append(out.Leases, &pb.LeaseStatus{ID: id})
		}
		reply(out, nil)
	})
	if err != nil {
		return nil, err
	}
	return resp.(*pb.LeaseLeasesResponse), nil
}

// LeaseKeepAlive renews leases at the leader for each request of the
// stream; a lease that is gone (or expired and revoked) is answered with
// TTL 0; an error (no leader, a timed-out forward) ends the stream, and
// the client opens a new one (etcd's v3rpc leaseKeepAlive).
func (s *leaseService) LeaseKeepAlive(srv grpc.BidiStreamingServer[pb.LeaseKeepAliveRequest, pb.LeaseKeepAliveResponse]) error {
	m := s.m
	st := m.newStream(srv.Context(), "LeaseKeepAlive")
	go func() {
		for {
			req, err := srv.Recv()
			if err != nil {
				st.fail(err)
				return
			}
			ok := st.in("renew", req, func() {
				m.atLeader("LeaseKeepAlive", st.client, func(l *Member, done func(any, error)) {
					l.renew(req.ID, func(ttl int64, err error) { done(ttl, err) })
				}, func(ttl any, err error) {
					if err != nil {
						st.fail(err)
						return
					}
					st.push(&pb.LeaseKeepAliveResponse{Header: m.header(), ID: req.ID, TTL: ttl.(int64)})
				})
			})
			if !ok {
				st.fail(errEnded)
				return
			}
		}
	}()
	return st.serve(srv.Context(), func(msg proto.Message) error { return srv.Send(msg.(*pb.LeaseKeepAliveResponse)) })
}

// atLeader runs fn on the leader and hands its answer to done on this
// member: a member that is not the leader forwards the question over the
// network (etcd forwards renewals to the leader's peer URL) and gives up
// after the request timeout.
func (m *Member) atLeader(op, client string, fn func(l *Member, done func(any, error)), done func(any, error)) {
	if m.isLeader() {
		fn(m, done)
		return
	}
	l := m.c.byID[m.lead]
	if l == nil {
		done(nil, errNoLeader)
		return
	}
	w := m.c.w
	finished := false
	finish := func(r any, err error) {
		if !finished {
			finished = true
			done(r, err)
		}
	}
	gen := m.gen
	timer := w.AtKey(w.Later(m.c.cfg.RequestTimeout), "etcd forward timeout "+m.Name+" "+op+" "+client, func() {
		if m.gen == gen {
			finish(nil, errTimeout)
		}
	})
	req := &sim.Message{From: m.Name, To: l.Name, Client: client, Dir: sim.Request, Op: op, Summary: op + " forwarded"}
	w.Net.Send(req, func() {
		l.whenRunning(func() {
			fn(l, func(r any, err error) {
				rep := &sim.Message{From: l.Name, To: m.Name, Client: client, Dir: sim.Reply, Op: op, Summary: op + " answered"}
				w.Net.Send(rep, func() {
					if m.gen == gen {
						timer.Cancel()
						finish(r, err)
					}
				})
			})
		})
	})
}

// whenRunning runs fn now, or when the member's host resumes; never on a
// crashed member.
func (m *Member) whenRunning(fn func()) {
	gen := m.gen
	switch {
	case m.down:
	case m.Host.Paused():
		m.held = append(m.held, func() {
			if m.gen == gen && !m.down {
				fn()
			}
		})
	default:
		fn()
	}
}
