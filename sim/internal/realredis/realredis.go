// Package realredis starts and stops real redis-server processes for the
// differential tests: on 127.0.0.1 only, on a free port, in a temporary
// directory, in the foreground (never daemonized), so every process it
// starts is one it kills and waits for. It is for tests only.
//
// Without redis-server on PATH a test skips with a message; with CI=true it
// fails instead, so CI can never pass by skipping the proof that the
// simulator behaves as Redis does (scripts/install-redis.sh installs it).
package realredis

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Binary returns the path of redis-server, or ends the test: a skip when the
// binary is missing, a failure when CI=true.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not found on PATH; install it with scripts/install-redis.sh to run the differential tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: failing instead of skipping)")
		}
		t.Skip(msg)
	}
	return path
}

// Options configure a server. The zero value is a server without any
// persistence, as the simulated node without persistence.
type Options struct {
	// AppendOnly turns the append-only file on, with AppendFsync ("always",
	// "everysec", "no"; "always" when empty).
	AppendOnly  bool
	AppendFsync string
	// Extra are further "--name value" arguments.
	Extra []string
}

// Server is one redis-server process, restartable on the same port and
// directory (kill -9 then start again is how a crash is tested).
type Server struct {
	Port int
	Dir  string

	bin  string
	opts Options
	// sentinel is set for a Sentinel (sentinel.go): the process runs
	// from a config file Sentinel rewrites, not from arguments.
	sentinel *sentinelConf
	cmd      *exec.Cmd
	done     chan struct{} // closed when cmd has been waited for
}

// Start runs a redis-server and waits until it answers PING. The server is
// stopped and its directory removed by t.Cleanup, also when the test fails.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{bin: Binary(t), opts: o}
	launch(t, s)
	return s
}

// launch gives s a temporary directory and a free port and starts it,
// registering its kill and the directory's removal with t.Cleanup.
func launch(t testing.TB, s *Server) {
	t.Helper()
	dir, err := os.MkdirTemp(tempBase(), "locklab-redis-")
	if err != nil {
		t.Fatalf("realredis: temp dir: %v", err)
	}
	s.Dir = dir
	t.Cleanup(func() {
		s.Kill()
		os.RemoveAll(dir)
	})
	// A free port can be taken by someone else between our probe and the
	// server's bind; try a few.
	var lastErr error
	for range 5 {
		if s.Port, err = freePort(); err != nil {
			t.Fatalf("realredis: free port: %v", err)
		}
		if lastErr = s.start(); lastErr == nil {
			return
		}
	}
	t.Fatalf("realredis: %v", lastErr)
}

// what names the process in errors.
func (s *Server) what() string {
	if s.sentinel != nil {
		return "redis-sentinel"
	}
	return "redis-server"
}

// logName is the log file in Dir.
func (s *Server) logName() string {
	if s.sentinel != nil {
		return "sentinel.log"
	}
	return "redis.log"
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) args() []string {
	if s.sentinel != nil {
		return s.sentinelArgs()
	}
	fsync := s.opts.AppendFsync
	if fsync == "" {
		fsync = "always"
	}
	appendonly := "no"
	if s.opts.AppendOnly {
		appendonly = "yes"
	}
	a := []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--protected-mode", "yes",
		"--dir", s.Dir,
		"--daemonize", "no",
		"--save", "",
		"--appendonly", appendonly,
		"--appendfsync", fsync,
		"--logfile", "redis.log",
		"--unixsocket", "",
	}
	return append(a, s.opts.Extra...)
}

// start launches the process and waits for PING; on failure the process is
// killed and the error quotes the end of the server's log.
func (s *Server) start() error {
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.Dir
	// Kill the server if the test binary dies without running its cleanups
	// (a panic timeout); best effort, Linux only, see pdeathsig_*.go.
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	done := s.done
	go func() {
		cmd.Wait()
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ping(s.Addr()); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s on port %d exited at start: %s", s.what(), s.Port, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("%s on port %d did not answer PING within 10s: %s", s.what(), s.Port, s.logTail())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, s.logName()))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// ping sends one inline PING and reads the reply; loading an AOF answers
// -LOADING, which is not ready.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return errors.New(strings.TrimSpace(line))
	}
	return nil
}

// Kill sends SIGKILL (kill -9: no shutdown, no final fsync) and waits for
// the process. Harmless when the server is not running.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same port and directory, so it
// loads what its persistence kept, and waits until it answers PING.
func (s *Server) Restart() error {
	s.Kill()
	return s.start()
}

// Signal sends sig to the running server (SIGSTOP/SIGCONT stall a replica).
func (s *Server) Signal(sig os.Signal) error {
	if s.cmd == nil {
		return errors.New("realredis: server not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Pid is the running server's process id, 0 when it is not running (for a
// test that watches its state in /proc, as after SIGSTOP).
func (s *Server) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Client returns a go-redis client for the server with the same protocol
// settings the simulator's clients use (RESP2, no CLIENT SETINFO, no
// retries), so both sides decode replies the same way.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                     s.Addr(),
		Protocol:                 2,
		DisableIdentity:          true,
		MaxRetries:               -1,
		PoolSize:                 1,
		DialTimeout:              5 * time.Second,
		ReadTimeout:              10 * time.Second,
		WriteTimeout:             10 * time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// tempBase is where server directories go: /dev/shm when there is one, so
// that appendfsync always costs no disk flush (a kill -9 loses nothing the
// kernel holds either way; what fsync protects against, a power cut, is
// not what the tests do), else the usual temporary directory.
func tempBase() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "locklab-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return ""
}
