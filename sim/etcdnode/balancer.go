package etcdnode

// clientv3 asks gRPC for its round_robin balancer, which starts each new
// picker at a random member (grpc's endpointsharding draws from
// math/rand/v2, which no seed reaches). This balancer is a round robin
// without that draw, and with a turn per RPC method, so that the member a
// request goes to does not depend on which of two goroutines starting
// RPCs at one instant picked first. Members are taken in address order.

import (
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
)

const balancerName = "locklab_etcd_round_robin"

func init() {
	balancer.Register(builder{base.NewBalancerBuilder(balancerName, pickerBuilder{}, base.Config{HealthCheck: false})})
}

// builder wraps grpc's base balancer, which reads a resolver's Addresses,
// for clientv3's resolver, which gives Endpoints (one address each).
type builder struct{ balancer.Builder }

func (b builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return endpointAddresses{b.Builder.Build(cc, opts)}
}

type endpointAddresses struct{ balancer.Balancer }

func (e endpointAddresses) UpdateClientConnState(s balancer.ClientConnState) error {
	if len(s.ResolverState.Addresses) == 0 {
		for _, ep := range s.ResolverState.Endpoints {
			s.ResolverState.Addresses = append(s.ResolverState.Addresses, ep.Addresses...)
		}
	}
	return e.Balancer.UpdateClientConnState(s)
}

type pickerBuilder struct{}

type readyConn struct {
	addr string
	sc   balancer.SubConn
}

func (pickerBuilder) Build(info base.PickerBuildInfo) balancer.Picker {
	if len(info.ReadySCs) == 0 {
		return base.NewErrPicker(balancer.ErrNoSubConnAvailable)
	}
	var ready []readyConn
	for sc, i := range info.ReadySCs {
		ready = append(ready, readyConn{i.Address.Addr, sc})
	}
	slices.SortFunc(ready, func(a, b readyConn) int { return strings.Compare(a.addr, b.addr) })
	p := &picker{next: map[string]int{}}
	for _, r := range ready {
		p.conns = append(p.conns, r.sc)
	}
	return p
}

type picker struct {
	conns []balancer.SubConn
	mu    sync.Mutex
	next  map[string]int
}

func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	p.mu.Lock()
	i := p.next[info.FullMethodName]
	p.next[info.FullMethodName] = (i + 1) % len(p.conns)
	p.mu.Unlock()
	return balancer.PickResult{SubConn: p.conns[i]}, nil
}
