package mysqlnode

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// realMariaDB starts Debian's MariaDB 10.11 on 127.0.0.1 (free port,
// temporary datadir made by mariadb-install-db, no grant tables) with a
// database lab holding the fence table, and kills it when the test ends,
// also on failure. It returns the DSN of lab. Without mariadbd it skips,
// or fails under CI=true (scripts/install-mariadb.sh installs it).
func realMariaDB(t testing.TB) string {
	t.Helper()
	find := func(name string, dirs ...string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, d := range dirs {
			if p := filepath.Join(d, name); fileExists(p) {
				return p
			}
		}
		return ""
	}
	mariadbd := find("mariadbd", "/usr/sbin")
	installDB := find("mariadb-install-db", "/usr/bin", "/usr/sbin")
	if mariadbd == "" || installDB == "" {
		msg := "mariadbd/mariadb-install-db not found; install them with scripts/install-mariadb.sh to run the MySQL differential tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: failing instead of skipping)")
		}
		t.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "locklab-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	user := []string{}
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	install := exec.Command(installDB, append([]string{"--no-defaults", "--datadir=" + data, "--skip-test-db",
		"--auth-root-authentication-method=normal"}, user...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := exec.Command(mariadbd, append([]string{"--no-defaults", "--datadir=" + data,
		"--socket=" + filepath.Join(dir, "sock"), "--pid-file=" + filepath.Join(dir, "pid"),
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-grant-tables",
		"--skip-log-bin", "--innodb-buffer-pool-size=16M", "--max-connections=40",
		"--log-error=" + filepath.Join(dir, "server.log")}, user...)...)
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := srv.Start(); err != nil {
		t.Fatalf("starting mariadbd: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		_ = srv.Wait()
	})
	root := fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		db, err := sql.Open("mysql", root)
		if err == nil {
			err = db.Ping()
			if err == nil {
				for _, q := range []string{
					"CREATE DATABASE lab",
					"CREATE TABLE lab.fence (id INT PRIMARY KEY, version BIGINT NOT NULL, value BIGINT NOT NULL)",
					"INSERT INTO lab.fence VALUES (1, 0, 0)",
				} {
					if _, err := db.Exec(q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				db.Close()
				return root + "lab"
			}
			db.Close()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("mariadbd did not accept connections: %v\n%s", err, log)
		}
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// realDB opens dsn with go-sql-driver's quiet logger.
func realDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}
