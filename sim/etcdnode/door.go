package etcdnode

// Doors between gRPC's goroutines and the kernel. gRPC serves each request
// on a goroutine of its own, and several may be ready at one instant; the
// order in which they reach the kernel is the Go scheduler's. So a request
// never acts when its goroutine enters the kernel: it schedules a world
// event at that instant, keyed by its content (member, client host,
// method, the request's bytes), and acts there (sim/hooks.go: AtKey). An
// answer leaves the same way: one keyed event per answer wakes the one
// goroutine that sends it, so that only one goroutine writes to a
// connection between two kernel steps.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"
)

var errEnded = errors.New("etcdnode: the run has ended")

// clientOf names the client host at the other end of a request's
// connection (sim/dbnet names an end's address after its host).
func clientOf(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "?"
	}
	h, _, err := net.SplitHostPort(p.Addr.String())
	if err != nil {
		return p.Addr.String()
	}
	return h
}

// contentKey names a message by its content.
func contentKey(kind, member, client, op string, msg proto.Message) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	sum := sha256.Sum256(b)
	return fmt.Sprintf("etcd %s %s<%s %s %x", kind, member, client, op, sum[:8])
}

type result struct {
	resp any
	err  error
}

// call serves a unary request: run acts on the member inside the kernel
// and answers through reply; the goroutine waits outside the kernel.
func (m *Member) call(ctx context.Context, op string, req proto.Message, run func(reply func(resp any, err error))) (any, error) {
	w := m.c.w
	key := contentKey("req", m.Name, clientOf(ctx), op, req)
	ch := make(chan result, 1)
	entered := false
	w.Notify(key, func() {
		entered = true
		w.AtKey(w.Now(), key, func() {
			if m.down {
				return
			}
			run(func(resp any, err error) {
				w.AtKey(w.Now(), "etcd reply"+strings.TrimPrefix(key, "etcd req"), func() { ch <- result{resp, err} })
			})
		})
	})
	if !entered {
		return nil, errEnded
	}
	select {
	case r := <-ch:
		return r.resp, r.err
	case <-ctx.Done():
		m.c.barrier("etcd end" + strings.TrimPrefix(key, "etcd req"))
		return nil, ctx.Err()
	case <-m.c.endc:
		return nil, errEnded
	}
}

// barrier returns after a keyed event at this instant. A handler that
// ends because its context was cancelled waits there before it returns:
// the cancellation came from gRPC's reader goroutine taking in the
// client's RST_STREAM, and whether gRPC then writes trailers for the
// stream depends on whether that goroutine has finished with the stream —
// after a kernel step it always has.
func (c *Cluster) barrier(key string) {
	ch := make(chan struct{})
	entered := false
	c.w.Notify(key, func() {
		entered = true
		c.w.AtKey(c.w.Now(), key, func() { close(ch) })
	})
	if !entered {
		return
	}
	select {
	case <-ch:
	case <-c.endc:
	}
}

// stream is a streaming RPC served by a member (a watch or a keep-alive
// stream): requests enter through in, answers queue in out and leave one
// keyed event at a time.
type stream struct {
	m      *Member
	kind   string
	client string
	n      int // answers queued so far (kernel held)

	mu    sync.Mutex
	out   []proto.Message
	err   error
	ready chan struct{}

	watches   map[int64]*watch
	nextWatch int64
}

func (m *Member) newStream(ctx context.Context, kind string) *stream {
	return &stream{m: m, kind: kind, client: clientOf(ctx), ready: make(chan struct{}, 1), watches: map[int64]*watch{}}
}

// in hands a request of the stream to the kernel, as call does. It
// reports false once the run has ended.
func (s *stream) in(op string, req proto.Message, run func()) bool {
	w := s.m.c.w
	key := contentKey("req", s.m.Name, s.client, s.kind+"."+op, req)
	entered := false
	w.Notify(key, func() {
		entered = true
		w.AtKey(w.Now(), key, func() {
			if !s.m.down {
				run()
			}
		})
	})
	return entered
}

// push queues an answer (kernel held); it leaves at a keyed event.
func (s *stream) push(msg proto.Message) {
	s.n++
	w := s.m.c.w
	key := contentKey("send", s.m.Name, s.client, fmt.Sprintf("%s#%d", s.kind, s.n), msg)
	w.AtKey(w.Now(), key, func() {
		s.mu.Lock()
		s.out = append(s.out, msg)
		s.mu.Unlock()
		s.signal()
	})
}

// fail ends the stream with err (kernel held or not).
func (s *stream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.signal()
}

func (s *stream) signal() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// serve sends the stream's answers until it fails or its context ends;
// it returns after a kernel step (see barrier).
func (s *stream) serve(ctx context.Context, send func(proto.Message) error) error {
	err := s.sendAll(ctx, send)
	s.m.c.barrier(fmt.Sprintf("etcd end %s<%s %s", s.m.Name, s.client, s.kind))
	return err
}

func (s *stream) sendAll(ctx context.Context, send func(proto.Message) error) error {
	for {
		s.mu.Lock()
		out, err := s.out, s.err
		s.out = nil
		s.mu.Unlock()
		for _, msg := range out {
			if err := send(msg); err != nil {
				return err
			}
		}
		if err != nil && len(out) == 0 {
			return err
		}
		if len(out) > 0 {
			continue
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
