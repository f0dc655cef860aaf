package etcdnode

// Watches: a watch stream carries any number of watches, each on a key or
// a range from a start revision. A new watch first gets the events of its
// range from the history since its start revision, then every event the
// member applies, at the member's own pace: a watch served by a member cut
// off from the leader sees nothing new until the member catches up.

import (
	"context"
	"slices"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

type watchService struct {
	pb.UnimplementedWatchServer
	m *Member
}

type watch struct {
	id       int64
	key, end []byte
	prevKV   bool
	noPut    bool
	noDelete bool
	next     int64 // the first revision not yet sent
}

func (w *watch) wants(ev *mvccpb.Event) bool {
	switch {
	case ev.Kv.ModRevision < w.next:
		return false
	case ev.Type == mvccpb.Event_PUT && w.noPut, ev.Type == mvccpb.Event_DELETE && w.noDelete:
		return false
	}
	return inRange(ev.Kv.Key, w.key, w.end)
}

func (w *watch) events(evs []*mvccpb.Event) []*mvccpb.Event {
	var out []*mvccpb.Event
	for _, ev := range evs {
		if w.wants(ev) {
			e := &mvccpb.Event{Type: ev.Type, Kv: ev.Kv}
			if w.prevKV {
				e.PrevKv = ev.PrevKv
			}
			out = append(out, e)
		}
	}
	return out
}

func (s *watchService) Watch(srv grpc.BidiStreamingServer[pb.WatchRequest, pb.WatchResponse]) error {
	m := s.m
	st := m.newStream(srv.Context(), "Watch")
	ctx, cancel := context.WithCancel(srv.Context())
	defer cancel()
	m.c.w.Notify("etcd watch open "+m.Name+"<"+st.client, func() {
		if !m.down {
			m.streams = append(m.streams, st)
		}
	})
	go func() {
		for {
			req, err := srv.Recv()
			if err != nil {
				st.fail(err)
				return
			}
			if !st.in("req", req, func() { st.watchRequest(req) }) {
				st.fail(errEnded)
				return
			}
		}
	}()
	defer m.c.w.Notify("etcd watch close "+m.Name+"<"+st.client, func() {
		m.streams = slices.DeleteFunc(m.streams, func(x *stream) bool { return x == st })
	})
	return st.serve(ctx, func(msg proto.Message) error { return srv.Send(msg.(*pb.WatchResponse)) })
}

// watchRequest creates or cancels a watch (kernel held).
func (st *stream) watchRequest(req *pb.WatchRequest) {
	m := st.m
	switch r := req.RequestUnion.(type) {
	case *pb.WatchRequest_CreateRequest:
		c := r.CreateRequest
		id := c.WatchId
		if id == 0 {
			// clientv3 leaves the id to the server (AutoWatchID); etcd
			// counts from 0 per stream.
			id = st.nextWatch
			st.nextWatch++
		}
		w := &watch{id: id, key: c.Key, end: c.RangeEnd, prevKV: c.PrevKv, next: c.StartRevision}
		for _, f := range c.Filters {
			switch f {
			case pb.WatchCreateRequest_NOPUT:
				w.noPut = true
			case pb.WatchCreateRequest_NODELETE:
				w.noDelete = true
			}
		}
		if w.next <= 0 {
			w.next = m.kv.rev + 1
		}
		st.watches[id] = w
		st.push(&pb.WatchResponse{Header: m.header(), WatchId: id, Created: true})
		if past := w.events(m.kv.history); len(past) > 0 {
			st.push(&pb.WatchResponse{Header: m.header(), WatchId: id, Events: past})
			w.next = m.kv.rev + 1
		}
	case *pb.WatchRequest_CancelRequest:
		id := r.CancelRequest.WatchId
		if st.watches[id] != nil {
			delete(st.watches, id)
			st.push(&pb.WatchResponse{Header: m.header(), WatchId: id, Canceled: true})
		}
	case *pb.WatchRequest_ProgressRequest:
		st.push(&pb.WatchResponse{Header: m.header(), WatchId: -1})
	}
}

// notifyWatchers sends the events of one applied write to the watches of
// this member's streams (kernel held), in stream and watch order.
func (m *Member) notifyWatchers(evs []*mvccpb.Event) {
	for _, st := range m.streams {
		ids := make([]int64, 0, len(st.watches))
		for id := range st.watches {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			w := st.watches[id]
			if out := w.events(evs); len(out) > 0 {
				st.push(&pb.WatchResponse{Header: m.header(), WatchId: id, Events: out})
				w.next = m.kv.rev + 1
			}
		}
	}
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortStrings(s []string) { slices.Sort(s) }
