package ensemble

import (
	"errors"
	"fmt"
	record "github.com/locklab/locklab/sim/event"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Dialing a server: the dialer go-zookeeper is given, and its host
// provider, which walks the servers in a fixed order.

// Dialer returns a go-zookeeper Dialer for a client on host. Dialing a
// crashed server is refused at once; dialing across a partition fails after
// the client's connect timeout, as a SYN that is never answered does.
func (e *Ensemble) Dialer(host string) func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		name := address
		if i := strings.LastIndexByte(name, ':'); i >= 0 {
			name = name[:i]
		}
		for {
			var (
				c    *Conn
				wait <-chan struct{}
				cut  bool
				err  error
			)
			if e.w == nil {
				e.mu.Lock()
				c, wait, cut, err = e.dial(host, name, network)
				e.mu.Unlock()
			} else {
				// World mode: refuse at once, without the kernel, once
				// the run is over or the host crashed; otherwise enter
				// the kernel, then take e.mu.
				e.mu.Lock()
				err = e.dialRefused(host, network)
				crashed := e.crashedHosts[host] && !e.stopping
				e.mu.Unlock()
				if crashed {
					// A crashed host runs nothing: its client's
					// goroutines stay still until the run ends instead
					// of retrying once a second.
					<-e.stop
				}
				if err != nil {
					return nil, err
				}
				err = &net.OpError{Op: "dial", Net: network, Err: errors.New("ensemble stopped")}
				e.w.ActFromNamed(host, "zk dial "+host, func() {
					e.mu.Lock()
					defer e.mu.Unlock()
					c, wait, cut, err = e.dial(host, name, network)
				})
			}
			if wait != nil {
				// A paused host dials nobody until it resumes.
				select {
				case <-wait:
				case <-e.stop:
				}
				continue
			}
			if cut {
				// A SYN that is never answered; Stop ends the wait so the
				// client's goroutines can leave the bubble.
				t := time.NewTimer(timeout)
				defer t.Stop()
				select {
				case <-t.C:
				case <-e.stop:
				}
				return nil, &net.OpError{Op: "dial", Net: network, Err: timeoutError{}}
			}
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
}

// dial is one attempt to connect host to server name (e.mu held): a new
// connection, or a channel to wait on (the host is paused), or cut (the
// SYN goes unanswered), or a refusal.
func (e *Ensemble) dial(host, name, network string) (*Conn, <-chan struct{}, bool, error) {
	if e.paused[host] && !e.stopping {
		return nil, e.resumed, false, nil
	}
	s := e.byName[name]
	if s == nil {
		return nil, nil, false, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("no such host %q", name)}
	}
	if err := e.dialRefused(host, network); err != nil {
		return nil, nil, false, err
	}
	if !s.up {
		return nil, nil, false, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
	}
	if e.stopping {
		return nil, nil, false, &net.OpError{Op: "dial", Net: network, Err: errors.New("ensemble stopped")}
	}
	if e.cut(host, name) {
		e.record(host, record.Event{Kind: record.ConnectNoAnswer, Client: host, Node: name})
		return nil, nil, true, nil
	}
	// Connections are numbered per client host: one host dials from
	// one goroutine at a time, so the numbers never depend on which
	// client's goroutine ran first.
	e.hostConns[host]++
	c := &Conn{e: e, id: e.hostConns[host], host: host, server: s, notify: make(chan struct{}, 1)}
	s.conns = append(s.conns, c)
	e.conns = append(e.conns, c)
	if e.tracing() {
		e.record(host, c.connEvent(record.ConnectStarted))
	}
	return c, nil, false, nil
}

// dialRefused refuses a dial from a crashed host or after the run (world
// mode; both sets are empty standalone except after Stop).
func (e *Ensemble) dialRefused(host, network string) error {
	if e.crashedHosts[host] {
		return &net.OpError{Op: "dial", Net: network, Err: errors.New("client host crashed")}
	}
	if e.w != nil && e.stopping {
		return &net.OpError{Op: "dial", Net: network, Err: errors.New("ensemble stopped")}
	}
	return nil
}

// HostProvider is go-zookeeper's HostProvider without DNS and without the
// client's random shuffle: servers are tried in name order starting at a
// given index, so every run connects the same way. retryStart follows
// DNSHostProvider: true when the provider comes back round to the server
// it last connected to (the client then waits a second).
type HostProvider struct {
	mu      sync.Mutex
	servers []string
	start   int
	curr    int
	last    int
	// settle, if set, runs before Next says retryStart, outside mu
	// (reconnect.go). Set it before the client starts.
	settle func()
}

// NewHostProvider starts at the start-th server (modulo their number).
func NewHostProvider(start int) *HostProvider { return &HostProvider{start: start} }

func (p *HostProvider) Init(servers []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.servers = append([]string{}, servers...)
	sort.Strings(p.servers)
	if len(p.servers) == 0 {
		return errors.New("zk sim: no servers")
	}
	n := len(p.servers)
	p.curr = (p.start%n + n - 1) % n
	p.last = -1
	return nil
}

func (p *HostProvider) Len() int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.servers) }

func (p *HostProvider) Next() (string, bool) {
	p.mu.Lock()
	p.curr = (p.curr + 1) % len(p.servers)
	retry := p.curr == p.last
	if p.last == -1 {
		p.last = p.curr
	}
	server, settle := p.servers[p.curr], p.settle
	p.mu.Unlock()
	if retry && settle != nil {
		settle()
	}
	return server, retry
}

func (p *HostProvider) Connected() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = p.curr
}

// quietLogger drops go-zookeeper's log lines (they would go to the real
// log package and its wall clock). Set LOCKLAB_ZK_LOG=1 to see them.
type quietLogger struct{}

func (quietLogger) Printf(format string, a ...any) {
	if os.Getenv("LOCKLAB_ZK_LOG") != "" {
		fmt.Fprintf(os.Stderr, "zk: "+format+"\n", a...)
	}
}
