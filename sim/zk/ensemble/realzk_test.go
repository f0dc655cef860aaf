package ensemble

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locklab/locklab/sim/proptest"
)

// A real ZooKeeper 3.8 (Debian's package, installed by
// scripts/install-zookeeper.sh) run standalone on 127.0.0.1 for the
// differential tests: started once per test binary on first use, stopped
// and its directory removed by TestMain, also when a test fails; the JVM
// is killed with the test process if that dies first (Pdeathsig).

const zkJar = "/usr/share/java/zookeeper.jar"

var real struct {
	once sync.Once
	addr string
	cmd  *exec.Cmd
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	proptest.Setup(0) // rapid's pinned seed (see package proptest)
	code := m.Run()
	stopRealZK()
	os.Exit(code)
}

// realZK returns the address of the real server, skipping the test when
// ZooKeeper or Java is missing, unless CI=true, where that is a failure.
func realZK(t *testing.T) string {
	t.Helper()
	java, jerr := exec.LookPath("java")
	if _, err := os.Stat(zkJar); err != nil || jerr != nil {
		msg := fmt.Sprintf("real ZooKeeper not available (%s and java needed; run scripts/install-zookeeper.sh)", zkJar)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	real.once.Do(func() { real.addr, real.err = startRealZK(java) })
	if real.err != nil {
		t.Fatalf("starting ZooKeeper: %v", real.err)
	}
	return real.addr
}

func startRealZK(java string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "locklab-zk-")
	if err != nil {
		return "", err
	}
	real.dir = dir
	cfg := fmt.Sprintf("tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n4lw.commands.whitelist=srvr\n",
		filepath.Join(dir, "data"), port)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return "", err
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return "", err
	}
	cmd := exec.Command(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false", "-cp", zkJar,
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	real.cmd = cmd
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			c.Write([]byte("srvr"))
			buf, _ := io.ReadAll(c)
			c.Close()
			// "Mode: standalone" once the server serves clients.
			if strings.Contains(string(buf), "Mode:") {
				return addr, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	return "", fmt.Errorf("ZooKeeper did not answer on %s within 60s; its log:\n%s", addr, log)
}

func stopRealZK() {
	if real.cmd != nil && real.cmd.Process != nil {
		real.cmd.Process.Kill()
		real.cmd.Wait()
	}
	if real.dir != "" {
		os.RemoveAll(real.dir)
	}
}
