package live

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/zklock/gozk"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/zk/wire"
)

// The ZooKeeper backend live: one real ZooKeeper server, zk1.
func init() {
	registerLive(gozk.Backend, liveBackend{
		new: func(sc *scenarios.Scenario) (backend, error) {
			timeout := 6 * time.Second // scenarios' default session timeout
			if v, ok := sc.Params["session_timeout"]; ok {
				d, err := time.ParseDuration(v)
				if err != nil {
					return nil, fmt.Errorf("params.session_timeout: %v", err)
				}
				timeout = d
			}
			return &zkBackend{sc: sc, timeout: timeout}, nil
		},
		expressible: func(sc *scenarios.Scenario) []string {
			why := paramsExpressible(sc, zkLiveParams)
			if n := sc.Params["zk_servers"]; n != "1" {
				why = append(why, fmt.Sprintf("params.zk_servers is %s: live mode starts one ZooKeeper server so far (zk_servers: \"1\"), not an ensemble", orDefault(n, "3 (the default)")))
			}
			return why
		},
		installed: func(*scenarios.Scenario) []func() error { return []func() error{zkInstalled} },
		crashable: func(_ *scenarios.Scenario, f faults.Fault) (bool, string) { return f.Target == "zk1", "" },
	})
}

// zkLiveParams are the params a live ZooKeeper run honours: the session's
// and the recipes' own. The simulated ensemble's (election_time,
// tick_time, sync_limit, apply_lag) have no live counterpart.
var zkLiveParams = []string{"zk_servers", "session_timeout", "stop_on_disconnect", "replace_handle_on_lost", "lost_after", algorithms.ParamTokenSource}

// zkJar is Debian's ZooKeeper 3.8 (scripts/install-zookeeper.sh).
const zkJar = "/usr/share/java/zookeeper.jar"

// zkServer is one standalone ZooKeeper server, zk1, on 127.0.0.1. It keeps
// its directory and port across a crash, as a ZooKeeper server restarts
// from its transaction log.
type zkServer struct {
	dir, java string
	port      int
	cmd       *exec.Cmd
	done      chan struct{}
}

func (s *zkServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

func (s *zkServer) start() error {
	cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n4lw.commands.whitelist=srvr\n",
		filepath.Join(s.dir, "data"), s.port)
	cfgPath := filepath.Join(s.dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false", "-cp", zkJar,
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.dir, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", s.addr(), time.Second); err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte("srvr"))
			buf, _ := io.ReadAll(c)
			c.Close()
			if strings.Contains(string(buf), "Mode:") {
				return nil
			}
		}
		select {
		case <-s.done:
			return errors.New("ZooKeeper exited at start (see its server.log)")
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.kill()
	return errors.New("ZooKeeper did not serve within 60 s")
}

func (s *zkServer) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// zkBackend is the scenario's ZooKeeper as one real server (zk_servers:
// 1) and one go-zookeeper handle per client, reaching it through the
// client's link.
type zkBackend struct {
	sc      *scenarios.Scenario
	server  *zkServer
	timeout time.Duration
	// kernel orders what the recipes ask to run "in the kernel"
	// (gozk.Session.Notify, After): in a live run, one at a time.
	kernel sync.Mutex

	mu       sync.Mutex
	sessions []*zkSession
}

// zkSession is one client's handle and the callbacks the recipe asked for.
type zkSession struct {
	gozk.Session
	mu    sync.Mutex
	subs  []func(zk.Event)
	atEnd []func()
	conns []*zk.Conn
}

// zkInstalled checks for ZooKeeper's jar and a JRE.
func zkInstalled() error {
	_, err := exec.LookPath("java")
	if _, serr := os.Stat(zkJar); serr != nil || err != nil {
		return fmt.Errorf("ZooKeeper not available (%s and java are needed): install it with bash scripts/install-zookeeper.sh", zkJar)
	}
	return nil
}

func (b *zkBackend) start(root string, _ Options) error {
	if err := zkInstalled(); err != nil {
		return err
	}
	java, _ := exec.LookPath("java")
	port, err := freePort()
	if err != nil {
		return err
	}
	b.server = &zkServer{dir: filepath.Join(root, "zk1"), java: java, port: port}
	if err := os.MkdirAll(b.server.dir, 0o700); err != nil {
		return err
	}
	return b.server.start()
}

func (b *zkBackend) hosts() []runner.Host {
	return []runner.Host{{Name: "zk1", Role: "ZooKeeper server (live)"}}
}

func (b *zkBackend) process(name string) process {
	if name == "zk1" {
		return b.server
	}
	return nil
}

func (b *zkBackend) close() {
	b.mu.Lock()
	sessions := b.sessions
	b.mu.Unlock()
	for _, s := range sessions {
		s.mu.Lock()
		atEnd, conns := s.atEnd, s.conns
		s.atEnd = nil
		s.mu.Unlock()
		for _, fn := range atEnd {
			fn()
		}
		for _, c := range conns {
			c.Close()
		}
	}
	if b.server != nil {
		b.server.kill()
	}
}

// connect opens the client's go-zookeeper handle and waits for its
// session, before the run's clock starts (as redisBackend.connect does).
func (b *zkBackend) connect(r *run, c *clientHost) (algorithms.Conns, error) {
	l := &streamLink{client: c, server: "zk1", addr: b.server.addr, fabric: r.fabric, frames: zkFrames, count: func() { r.messages.Add(1) }}
	s := &zkSession{}
	dialHandle := func() (*zk.Conn, error) {
		connected := make(chan struct{})
		var once sync.Once
		conn, _, err := zk.Connect([]string{b.server.addr()}, b.timeout,
			zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
				return l.dial(context.Background(), network, address)
			}),
			zk.WithLogger(quietZK{}),
			zk.WithEventCallback(func(ev zk.Event) {
				if ev.State == zk.StateHasSession {
					once.Do(func() { close(connected) })
				}
				s.event(ev)
			}))
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		select {
		case <-connected:
		case <-time.After(10 * time.Second):
			return nil, errors.New("no ZooKeeper session within 10 s")
		}
		return conn, nil
	}
	conn, err := dialHandle()
	if err != nil {
		return algorithms.Conns{}, err
	}
	s.Session = gozk.Session{
		Conn: conn,
		OnEvent: func(fn func(zk.Event)) {
			s.mu.Lock()
			s.subs = append(s.subs, fn)
			s.mu.Unlock()
		},
		AtEnd: func(fn func()) {
			s.mu.Lock()
			s.atEnd = append(s.atEnd, fn)
			s.mu.Unlock()
		},
		Rand:           liveRand{rand.New(rand.NewPCG(c.seed, 0x2c))},
		SessionTimeout: b.timeout,
		Notify: func(fn func()) {
			b.kernel.Lock()
			defer b.kernel.Unlock()
			fn()
		},
		After: func(d time.Duration, fn func()) func() {
			t := time.AfterFunc(d, func() {
				b.kernel.Lock()
				defer b.kernel.Unlock()
				fn()
			})
			return func() { t.Stop() }
		},
		Replace: func(why string) <-chan *zk.Conn {
			ch := make(chan *zk.Conn, 1)
			old := s.Conn
			go func() {
				old.Close()
				conn, err := dialHandle()
				if err != nil {
					close(ch)
					return
				}
				ch <- conn
				close(ch)
			}()
			return ch
		},
	}
	b.mu.Lock()
	b.sessions = append(b.sessions, s)
	b.mu.Unlock()
	return algorithms.Conns{Backend: &s.Session}, nil
}

func (s *zkSession) event(ev zk.Event) {
	s.mu.Lock()
	subs := append([]func(zk.Event){}, s.subs...)
	s.mu.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

// liveRand is an io.Reader over a seeded source, for the recipes' GUIDs.
type liveRand struct{ r *rand.Rand }

func (l liveRand) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(l.r.Uint32())
	}
	return len(p), nil
}

type quietZK struct{}

func (quietZK) Printf(string, ...any) {}

// zkFrames reads one connection's messages: length-prefixed (jute). The
// client's first message is a ConnectRequest, the others start with a
// RequestHeader (xid, opcode); a reply starts with a ReplyHeader (xid,
// zxid, err) and is named after the request with its xid, so that a fault
// on "the reply to c1's CREATE" finds it. Watch events (xid -1) and pings
// (xid -2) are named WATCH and PING.
func zkFrames() (frameReader, frameReader) {
	var mu sync.Mutex
	ops := map[int32]string{}
	requests := func(r *bufio.Reader, first bool) ([]byte, string, error) {
		raw, _, err := lengthPrefixed(r, false, false)
		if err != nil {
			return nil, "", err
		}
		if first || len(raw) < 12 {
			return raw, "CONNECT", nil
		}
		xid := int32(binary.BigEndian.Uint32(raw[4:8]))
		op := wire.OpName(int32(binary.BigEndian.Uint32(raw[8:12])))
		mu.Lock()
		ops[xid] = op
		mu.Unlock()
		return raw, op, nil
	}
	replies := func(r *bufio.Reader, first bool) ([]byte, string, error) {
		raw, _, err := lengthPrefixed(r, false, false)
		if err != nil || first || len(raw) < 8 {
			return raw, "CONNECT", err
		}
		xid := int32(binary.BigEndian.Uint32(raw[4:8]))
		switch xid {
		case -1:
			return raw, "WATCH", nil
		case -2:
			return raw, "PING", nil
		}
		mu.Lock()
		op := ops[xid]
		delete(ops, xid)
		mu.Unlock()
		return raw, op, nil
	}
	return requests, replies
}
