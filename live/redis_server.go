package live

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is one real redis-server process that a live run started: on
// 127.0.0.1 only, on a port it chose, in a directory of its own, with a
// password made for this run (requirepass), so that a live run opens
// nothing to other users of the host. It runs in the foreground, never
// daemonized, so every process started here is one that is killed and
// waited for.
type redisServer struct {
	Name     string
	Port     int
	Dir      string
	Password string

	bin  string
	cmd  *exec.Cmd
	done chan struct{}
	// down is set while the node is crashed (a node-crash fault): its
	// links then answer nothing (proxy.go).
	down atomic.Bool
	// admin is the harness's own connection, which faults use (the TTL
	// sweep of a clock jump): it does not pass through any client's proxy.
	admin *redis.Client
}

// RedisBinary finds redis-server, or says how to install it.
func RedisBinary() (string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server not found on PATH: install it with bash scripts/install-redis.sh")
	}
	return path, nil
}

// startRedis starts a server called name in a new directory under root.
func startRedis(bin, root, name string) (*redisServer, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &redisServer{Name: name, Dir: dir, bin: bin, Password: secret()}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// secret is a password for one run's servers.
func secret() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b)
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server (again, after a crash, on the same port: its
// clients' proxies keep dialling the address they know). Nothing is
// persisted: a restarted node comes back empty, as a simulated node
// without persistence does.
func (s *redisServer) start() error {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		// A fresh port each time: a port chosen free can be taken before
		// the server binds it, and a restarted node need not keep its
		// port (its clients' proxies dial Addr anew for each connection).
		p, err := freePort()
		if err != nil {
			return err
		}
		s.Port = p
		cmd := exec.Command(s.bin,
			"--bind", "127.0.0.1", "--port", strconv.Itoa(s.Port),
			"--requirepass", s.Password, "--protected-mode", "yes",
			"--dir", s.Dir, "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--loglevel", "warning",
			"--logfile", filepath.Join(s.Dir, "redis.log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting redis-server for %s: %w", s.Name, err)
		}
		s.cmd, s.done = cmd, make(chan struct{})
		s.down.Store(false)
		go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
		if err := s.waitReady(5 * time.Second); err != nil {
			lastErr = err
			s.kill()
			continue
		}
		if s.admin != nil {
			s.admin.Close()
		}
		s.admin = redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.Password, Protocol: 2, DisableIdentity: true})
		return nil
	}
	return fmt.Errorf("redis-server for %s did not start: %v (log: %s)", s.Name, lastErr, s.logTail())
}

// Addr is the server's real address.
func (s *redisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// waitReady polls until the server answers PING.
func (s *redisServer) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("exited at start")
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			fmt.Fprintf(c, "AUTH %s\r\nPING\r\n", s.Password)
			c.SetReadDeadline(time.Now().Add(time.Second))
			r := bufio.NewReader(c)
			l1, _ := r.ReadString('\n')
			l2, _ := r.ReadString('\n')
			c.Close()
			if strings.HasPrefix(l1, "+OK") && strings.HasPrefix(l2, "+PONG") {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no PONG within " + limit.String())
}

// kill ends the process at once (a crash: SIGKILL) and waits for it.
func (s *redisServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.down.Store(true)
	s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process must be able to die
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// stop freezes the process (SIGSTOP); cont resumes it.
func (s *redisServer) stop() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }
func (s *redisServer) cont() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// close kills the server and removes its directory.
func (s *redisServer) close() {
	if s.admin != nil {
		s.admin.Close()
	}
	s.kill()
	os.RemoveAll(s.Dir)
}

// logTail is the end of the server's log, for an error message.
func (s *redisServer) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return "no log"
	}
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return strings.TrimSpace(string(b))
}

// shiftTTLs moves every expiry on the server by jump, which is what a step
// of the server's wall clock does to Redis: a key's expiry is an absolute
// time on the server's clock (db.c, expire.c), so a clock stepped forward
// by J expires every key J sooner, and one stepped back keeps them J
// longer; a key set after the step counts its relative TTL from the new
// time, at the real rate, as before. libfaketime cannot do this for
// redis-server (measured: it aborts at start, "unexpected recursive calls
// to clock_gettime()", jemalloc reads the clock inside libfaketime's own
// initialisation), so the step is applied to the keys instead: the same
// effect on every key that exists at the step. Keys whose TTL would fall
// to zero or below are expired (deleted), as the server would on its next
// look.
func (s *redisServer) shiftTTLs(ctx context.Context, jump time.Duration) (int, error) {
	// One Lua script, so the sweep is atomic: no client command lands
	// between two keys' shifts.
	const sweep = `
local moved = 0
local cursor = "0"
repeat
  local r = redis.call("SCAN", cursor, "COUNT", 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    local ttl = redis.call("PTTL", k)
    if ttl > 0 then
      local left = ttl - tonumber(ARGV[1])
      if left <= 0 then redis.call("DEL", k) else redis.call("PEXPIRE", k, left) end
      moved = moved + 1
    end
  end
until cursor == "0"
return moved`
	n, err := s.admin.Eval(ctx, sweep, nil, jump.Milliseconds()).Int()
	return n, err
}
