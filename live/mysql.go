package live

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/mysqllock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// The MySQL backend live: one real MariaDB server, db1.
func init() {
	registerLive(mysqllock.Backend, liveBackend{
		new:         func(sc *scenarios.Scenario) (backend, error) { return &myBackend{sc: sc}, nil },
		expressible: mysqlExpressible,
		installed: func(*scenarios.Scenario) []func() error {
			return []func() error{func() error { _, _, err := mariadbBinaries(); return err }}
		},
		crashable: func(_ *scenarios.Scenario, f faults.Fault) (bool, string) { return f.Target == "db1", "" },
	})
}

// myLiveParams are the MySQL backend's params a live run honours: one
// MariaDB server. A multi-primary cluster (nodes: 2) and TCP keepalive
// settings have no live counterpart yet.
var myLiveParams = []string{"nodes", "route", "shared_pool", "own_pool", "wait_timeout", algorithms.ParamTokenSource, "fence_start"}

func mysqlExpressible(sc *scenarios.Scenario) []string {
	why := paramsExpressible(sc, myLiveParams)
	if n := sc.Params["nodes"]; n != "" && n != "1" {
		why = append(why, "params.nodes is "+n+": a live multi-primary cluster (Galera) is not wired yet")
	}
	return why
}

// mariadbBinaries finds mariadbd and mariadb-install-db.
func mariadbBinaries() (server, install string, err error) {
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return filepath.Join(dir, name)
			}
		}
		return ""
	}
	server, install = find("mariadbd"), find("mariadb-install-db")
	if server == "" || install == "" {
		return "", "", errors.New("mariadbd/mariadb-install-db not found: install MariaDB with bash scripts/install-mariadb.sh")
	}
	return server, install, nil
}

// myServer is one MariaDB server, db1.
type myServer struct {
	dir, bin string
	port     int
	cmd      *exec.Cmd
	done     chan struct{}
}

func (s *myServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *myServer) start() error {
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(s.dir, "data"),
		"--socket=" + filepath.Join(s.dir, "sock"), "--pid-file=" + filepath.Join(s.dir, "pid"),
		"--port=" + strconv.Itoa(s.port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--skip-log-bin", "--innodb-buffer-pool-size=16M", "--max-connections=200",
		"--log-error=" + filepath.Join(s.dir, "server.log")}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting mariadbd: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	return nil
}

func (s *myServer) kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// myBackend is the scenario's MySQL as one real MariaDB server, with a
// user made for the run.
type myBackend struct {
	sc       *scenarios.Scenario
	server   *myServer
	password string

	mu      sync.Mutex
	shared  *mysqllock.Client
	clients []*mysqllock.Client
}

func (b *myBackend) start(root string, _ Options) error {
	bin, install, err := mariadbBinaries()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "db1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "data"), "--skip-test-db", "--auth-root-authentication-method=normal"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db: %v: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	b.server = &myServer{dir: dir, bin: bin, port: port}
	if err := b.server.start(); err != nil {
		return err
	}
	b.password = secret()
	return b.prepare()
}

// prepare makes the database, the fence row and the run's user; then root
// gets the run's password too, so nothing on the server is open.
func (b *myBackend) prepare() error {
	var db *sql.DB
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		db, err = sql.Open("mysql", "root@unix("+filepath.Join(b.server.dir, "sock")+")/")
		if err == nil {
			if err = db.Ping(); err == nil {
				break
			}
			db.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("MariaDB did not serve within 60 s: %v", err)
		}
	}
	defer db.Close()
	wait := ""
	if v, ok := b.sc.Params["wait_timeout"]; ok {
		d, _ := time.ParseDuration(v)
		wait = fmt.Sprintf("SET GLOBAL wait_timeout = %d", max(1, int(d.Seconds())))
	}
	start := b.sc.Params["fence_start"]
	if start == "" {
		start = "0"
	}
	for _, q := range []string{
		"CREATE DATABASE lab",
		"CREATE TABLE lab.fence (id INT PRIMARY KEY, version BIGINT NOT NULL, value BIGINT NOT NULL)",
		"INSERT INTO lab.fence VALUES (1, " + start + ", 0)",
		"CREATE USER app@'127.0.0.1' IDENTIFIED BY '" + b.password + "'",
		"GRANT ALL ON lab.* TO app@'127.0.0.1'",
		wait,
	} {
		if q == "" {
			continue
		}
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(q, " IDENTIFIED", 2)[0], err)
		}
	}
	return nil
}

func (b *myBackend) hosts() []runner.Host {
	return []runner.Host{{Name: "db1", Role: "mariadbd (live)"}}
}

func (b *myBackend) process(name string) process {
	if name == "db1" && b.server != nil {
		return b.server
	}
	return nil
}

func (b *myBackend) close() {
	b.mu.Lock()
	clients := b.clients
	b.mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	if b.server != nil {
		b.server.kill()
	}
}

// connect opens the client's database/sql pool as the simulated backend
// does (scenarios/mysql.go): one pool for every client with shared_pool,
// except own_pool's clients.
func (b *myBackend) connect(r *run, c *clientHost) (algorithms.Conns, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	own := slices.Contains(strings.Split(strings.ReplaceAll(b.sc.Params["own_pool"], " ", ""), ","), c.Name)
	if paramBool(b.sc, "shared_pool") && !own {
		if b.shared == nil {
			b.shared = b.open(r, c)
		}
		return algorithms.Conns{Backend: b.shared}, nil
	}
	return algorithms.Conns{Backend: b.open(r, c)}, nil
}

func (b *myBackend) open(r *run, c *clientHost) *mysqllock.Client {
	l := &streamLink{client: c, server: "db1", addr: b.server.addr, fabric: r.fabric,
		frames: func() (frameReader, frameReader) { return myRequest, myReply }, count: func() { r.messages.Add(1) }}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = "app", b.password
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", b.server.addr(), "lab"
	cfg.Logger = &mysql.NopLogger{}
	cfg.DialFunc = l.dial
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		panic(fmt.Sprintf("live mysql: %v", err)) // the configuration is ours
	}
	mc := &mysqllock.Client{DB: sql.OpenDB(conn), Config: cfg}
	b.clients = append(b.clients, mc)
	return mc
}

// myRequest and myReply frame MySQL packets
// (https://dev.mysql.com/doc/dev/mysql-server/latest/page_protocol_basic_packets.html):
// a 3-byte little-endian length and a sequence number. A client's packet
// is named after its command byte; the first is the handshake response.
func myRequest(r *bufio.Reader, first bool) ([]byte, string, error) {
	raw, err := myPacket(r)
	if err != nil {
		return nil, "", err
	}
	if first || len(raw) < 5 || raw[3] != 0 {
		return raw, "HANDSHAKE", nil
	}
	switch raw[4] {
	case 0x01:
		return raw, "QUIT", nil
	case 0x03:
		return raw, "QUERY", nil
	case 0x0e:
		return raw, "PING", nil
	case 0x16:
		return raw, "PREPARE", nil
	case 0x17:
		return raw, "EXECUTE", nil
	case 0x19:
		return raw, "CLOSE_STMT", nil
	}
	return raw, fmt.Sprintf("COM_%#x", raw[4]), nil
}

func myReply(r *bufio.Reader, _ bool) ([]byte, string, error) {
	raw, err := myPacket(r)
	return raw, "", err
}

func myPacket(r *bufio.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	raw := make([]byte, 4+n)
	copy(raw, h[:])
	if _, err := io.ReadFull(r, raw[4:]); err != nil {
		return nil, err
	}
	return raw, nil
}
