package live

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/pglock"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

func init() {
	registerLive(pglock.Backend, liveBackend{
		new: func(sc *scenarios.Scenario) (backend, error) { return &pgBackend{sc: sc}, nil },
		expressible: func(sc *scenarios.Scenario) []string {
			why := paramsExpressible(sc, pgLiveParams)
			if on, _ := strconv.ParseBool(sc.Params["standby"]); on {
				why = append(why, "params.standby: a live standby (streaming replication and promotion) is not wired yet")
			}
			return why
		},
		installed: func(sc *scenarios.Scenario) []func() error {
			need := []func() error{func() error { _, err := pgBinary("initdb"); return err }}
			if p := sc.Params["pooler"]; p == "session" || p == "transaction" {
				need = append(need, func() error { _, err := pgbouncerBinary(); return err })
			}
			return need
		},
		crashable: func(_ *scenarios.Scenario, f faults.Fault) (bool, string) {
			return f.Target == "db1" || f.Target == "pgbouncer", ""
		},
	})
}

// pgRole is the one role every client logs in as: the workers of one
// service. PgBouncer keeps a pool per (database, user) pair, so clients
// logging in as c1, c2, ... would each get a pool of their own and never
// share a server connection; the simulated pooler keeps one pool per
// database, which is one pool per user when everybody is the same user
// (docs/live.md, "Disagreements").
const pgRole = "app"

// pgLiveParams are the Postgres backend's params a live run honours.
// The TCP keepalive settings and the standby have no live counterpart yet.
var pgLiveParams = []string{"pooler", "pool_size", "server_reset_query", "server_reset_query_always", "server_lifetime",
	"direct_clients", "shared_pool", "pool_max_conns", "pool_max_conn_idle_time", "pool_health_check_period", algorithms.ParamTokenSource, "standby", "fence_start"}

// pgProcess is a real server process of the Postgres backend (postgres
// itself, or pgbouncer), run as nobody when the harness is root: postgres
// refuses to run as root, and so does pgbouncer.
type pgProcess struct {
	name string
	args []string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *pgProcess) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

func (p *pgProcess) start() error {
	cmd := asServerUser(p.args[0], p.args[1:]...)
	logf, err := os.OpenFile(filepath.Join(p.dir, p.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(p.done)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", p.addr(), 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			log, _ := os.ReadFile(filepath.Join(p.dir, p.name+".log"))
			return fmt.Errorf("%s exited at start: %s", p.name, strings.TrimSpace(string(log)))
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.kill()
	return fmt.Errorf("%s did not listen within 30 s", p.name)
}

// kill ends the process at once (a crash). Postgres's backends, its
// children, see the postmaster gone and exit on their own.
func (p *pgProcess) kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// asServerUser runs a server program, as nobody when this process is root
// (the process itself, not a runuser in between, so that a SIGKILL reaches
// the server), and killed with this process's thread (Pdeathsig).
func asServerUser(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		if uid, gid, err := nobody(); err == nil {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
		}
	}
	return cmd
}

func nobody() (uint32, uint32, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return 0, 0, fmt.Errorf("running Postgres as root needs the user nobody: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uint32(uid), uint32(gid), nil
}

// pgBinary finds a Postgres program: on PATH, or where Debian puts it.
func pgBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		slices.Sort(matches)
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s not found: install Postgres with bash scripts/install-postgres.sh", name)
}

// pgBackend is the scenario's Postgres as a real server, db1, and with
// params.pooler a real PgBouncer in front of it, both on 127.0.0.1 with a
// password made for the run for every client's role.
type pgBackend struct {
	sc       *scenarios.Scenario
	password string
	db       *pgProcess
	bouncer  *pgProcess

	mu     sync.Mutex
	shared *pglock.Client
	pools  []func()
}

func (b *pgBackend) start(root string, _ Options) error {
	b.password = secret()
	if err := b.startPostgres(root); err != nil {
		return err
	}
	if err := b.prepare(); err != nil {
		return err
	}
	if pooler := b.sc.Params["pooler"]; pooler == "session" || pooler == "transaction" {
		return b.startBouncer(root, pooler)
	}
	return nil
}

// serverDir makes a directory the server user owns.
func serverDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid, err := nobody()
	if err != nil {
		return err
	}
	return os.Chown(dir, int(uid), int(gid))
}

func (b *pgBackend) startPostgres(root string) error {
	initdb, err := pgBinary("initdb")
	if err != nil {
		return err
	}
	postgres, err := pgBinary("postgres")
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "db1")
	if err := serverDir(dir); err != nil {
		return err
	}
	pwfile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwfile, []byte(b.password+"\n"), 0o644); err != nil {
		return err
	}
	data := filepath.Join(dir, "data")
	if out, err := asServerUser(initdb, "-D", data, "-U", "postgres", "--pwfile", pwfile, "-A", "scram-sha-256", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v: %s", err, out)
	}
	os.Remove(pwfile)
	port, err := freePort()
	if err != nil {
		return err
	}
	b.db = &pgProcess{name: "postgres", dir: dir, port: port, args: []string{postgres, "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir, "-c", "fsync=off", "-c", "max_connections=200"}}
	return b.db.start()
}

// prepare makes the database, a role per client and the fence row.
func (b *pgBackend) prepare() error {
	ctx := context.Background()
	// The port opens before the server accepts sessions ("the database
	// system is starting up"): ask until it does.
	var admin *pgx.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; {
		admin, err = pgx.Connect(ctx, fmt.Sprintf("postgres://postgres:%s@%s/postgres?sslmode=disable", b.password, b.db.addr()))
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "57P03") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	stmts := []string{"CREATE DATABASE lab", fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", pgRole, b.password)}
	for _, s := range stmts {
		if _, err := admin.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(s, " PASSWORD", 2)[0], err)
		}
	}
	lab, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres:%s@%s/lab?sslmode=disable", b.password, b.db.addr()))
	if err != nil {
		return err
	}
	defer lab.Close(ctx)
	start := int64(0)
	if v, ok := b.sc.Params["fence_start"]; ok {
		start, _ = strconv.ParseInt(v, 10, 64)
	}
	for _, s := range []string{"CREATE TABLE fence (token bigint NOT NULL)", fmt.Sprintf("INSERT INTO fence VALUES (%d)", start), "GRANT SELECT, UPDATE ON fence TO PUBLIC"} {
		if _, err := lab.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

func (b *pgBackend) startBouncer(root, mode string) error {
	bin, err := pgbouncerBinary()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "pgbouncer")
	if err := serverDir(dir); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	users := fmt.Sprintf("%q %q\n", pgRole, b.password)
	if err := os.WriteFile(filepath.Join(dir, "users.txt"), []byte(users), 0o644); err != nil {
		return err
	}
	reset := "DISCARD ALL"
	if v, ok := b.sc.Params["server_reset_query"]; ok {
		reset = v
	}
	ini := fmt.Sprintf(`[databases]
lab = host=127.0.0.1 port=%d dbname=lab
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = scram-sha-256
auth_file = %s
pool_mode = %s
default_pool_size = %s
server_reset_query = %s
server_reset_query_always = %s
server_lifetime = %d
max_client_conn = 1000
`, b.db.port, port, filepath.Join(dir, "users.txt"), mode, paramOr(b.sc, "pool_size", "20"), reset,
		map[bool]string{true: "1", false: "0"}[paramBool(b.sc, "server_reset_query_always")],
		int(paramDur(b.sc, "server_lifetime", time.Hour).Seconds()))
	cfg := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(cfg, []byte(ini), 0o644); err != nil {
		return err
	}
	b.bouncer = &pgProcess{name: "pgbouncer", dir: dir, port: port, args: []string{bin, cfg}}
	return b.bouncer.start()
}

func paramOr(sc *scenarios.Scenario, key, def string) string {
	if v, ok := sc.Params[key]; ok {
		return v
	}
	return def
}

func paramBool(sc *scenarios.Scenario, key string) bool {
	on, _ := strconv.ParseBool(sc.Params[key])
	return on
}

func paramDur(sc *scenarios.Scenario, key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(sc.Params[key]); err == nil {
		return d
	}
	return def
}

func (b *pgBackend) hosts() []runner.Host {
	out := []runner.Host{{Name: "db1", Role: "postgres (live)"}}
	if b.bouncer != nil {
		out = append(out, runner.Host{Name: "pgbouncer", Role: "pgbouncer (live)"})
	}
	return out
}

func (b *pgBackend) process(name string) process {
	switch {
	case name == "db1" && b.db != nil:
		return b.db
	case name == "pgbouncer" && b.bouncer != nil:
		return b.bouncer
	}
	return nil
}

func (b *pgBackend) close() {
	b.mu.Lock()
	pools := b.pools
	b.mu.Unlock()
	for _, closePool := range pools {
		closePool()
	}
	if b.bouncer != nil {
		b.bouncer.kill()
	}
	if b.db != nil {
		b.db.kill()
	}
}

// connect hands the client its access to the database as the simulated
// backend does (scenarios/postgres.go): through the pooler unless the
// client is in direct_clients, with the simple protocol behind a pooler,
// and one shared client for every pooled client with shared_pool.
func (b *pgBackend) connect(r *run, c *clientHost) (algorithms.Conns, error) {
	direct := slices.Contains(strings.Split(strings.ReplaceAll(b.sc.Params["direct_clients"], " ", ""), ","), c.Name)
	if paramBool(b.sc, "shared_pool") && !direct {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.shared == nil {
			b.shared = b.client(r, c, direct)
		}
		return algorithms.Conns{Backend: b.shared}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return algorithms.Conns{Backend: b.client(r, c, direct)}, nil
}

func (b *pgBackend) client(r *run, c *clientHost, direct bool) *pglock.Client {
	target, simple := b.db, false
	if b.bouncer != nil && !direct {
		target, simple = b.bouncer, true
	}
	name := map[bool]string{true: "db1", false: "pgbouncer"}[target == b.db]
	l := &streamLink{client: c, server: name, addr: target.addr, fabric: r.fabric, frames: func() (frameReader, frameReader) { return pgRequest, pgReply }, count: func() { r.messages.Add(1) }}
	pc := &pglock.Client{}
	pc.Config = func() *pgx.ConnConfig {
		url := fmt.Sprintf("postgres://%s:%s@%s/lab?sslmode=disable", pgRole, b.password, target.addr())
		if simple {
			url += "&default_query_exec_mode=simple_protocol"
		}
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			panic(fmt.Sprintf("live postgres: %v", err)) // the URL is ours
		}
		cfg.DialFunc = l.dial
		return cfg
	}
	var mu sync.Mutex
	var pool *pgxpool.Pool
	var db *sql.DB
	pc.Pool = func() (*pgxpool.Pool, error) {
		mu.Lock()
		defer mu.Unlock()
		if pool != nil {
			return pool, nil
		}
		cfg, err := pgxpool.ParseConfig("")
		if err != nil {
			return nil, err
		}
		cfg.ConnConfig = pc.Config()
		n, _ := strconv.Atoi(paramOr(b.sc, "pool_max_conns", "4"))
		cfg.MaxConns = int32(n)
		cfg.MaxConnIdleTime = paramDur(b.sc, "pool_max_conn_idle_time", 30*time.Minute)
		cfg.HealthCheckPeriod = paramDur(b.sc, "pool_health_check_period", time.Minute)
		pool, err = pgxpool.NewWithConfig(context.Background(), cfg)
		return pool, err
	}
	pc.DB = func() (*sql.DB, error) {
		mu.Lock()
		defer mu.Unlock()
		if db == nil {
			db = stdlib.OpenDB(*pc.Config())
			n, _ := strconv.Atoi(paramOr(b.sc, "pool_max_conns", "4"))
			db.SetMaxOpenConns(n)
			db.SetConnMaxIdleTime(paramDur(b.sc, "pool_max_conn_idle_time", 30*time.Minute))
		}
		return db, nil
	}
	b.pools = append(b.pools, func() {
		mu.Lock()
		defer mu.Unlock()
		if pool != nil {
			pool.Close()
		}
		if db != nil {
			db.Close()
		}
	})
	return pc
}

// pgRequest frames a frontend's messages (the Postgres protocol,
// https://www.postgresql.org/docs/current/protocol-message-formats.html):
// the first is a startup message with no type byte, the rest a type byte
// and a length that counts itself.
func pgRequest(r *bufio.Reader, first bool) ([]byte, string, error) {
	if first {
		raw, _, err := lengthPrefixed(r, false, true)
		return raw, "STARTUP", err
	}
	raw, typ, err := lengthPrefixed(r, true, true)
	return raw, pgMessageName(typ), err
}

// pgReply frames a backend's messages: a type byte and a length.
func pgReply(r *bufio.Reader, _ bool) ([]byte, string, error) {
	raw, typ, err := lengthPrefixed(r, true, true)
	return raw, pgMessageName(typ), err
}

func pgMessageName(t byte) string {
	switch t {
	case 'Q':
		return "QUERY"
	case 'P':
		return "PARSE"
	case 'B':
		return "BIND"
	case 'E':
		return "EXECUTE"
	case 'S':
		return "SYNC"
	case 'X':
		return "TERMINATE"
	case 'p':
		return "PASSWORD"
	}
	return "MSG_" + string(rune(t))
}

// pgbouncerBinary finds pgbouncer: on PATH, or where Debian puts it.
func pgbouncerBinary() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("pgbouncer not found: install it with bash scripts/install-pgbouncer.sh")
}
