package pgnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// realPostgres starts a real Postgres 15 on 127.0.0.1 (free port, temporary
// data directory, trust authentication, fsync off) and stops it when the
// test ends, also on failure. Without initdb/postgres on PATH it skips, or
// fails under CI=true (scripts/install-postgres.sh installs them). Postgres
// refuses to run as root, so as root it runs as nobody via runuser.
func realPostgres(t testing.TB) string {
	t.Helper()
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 != nil || err2 != nil {
		msg := "initdb/postgres not found on PATH; install them with scripts/install-postgres.sh to run the Postgres differential test"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: failing instead of skipping)")
		}
		t.Skip(msg)
	}
	// Not t.TempDir: its parent is private to root, and nobody must reach it.
	dir, err := os.MkdirTemp("", "locklab-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	asUser := func(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("running as root needs user nobody for postgres: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		asUser = func(name string, args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "nobody", "--", name}, args...)...)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := asUser(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := asUser(postgres, "-D", data, "-k", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "fsync=off", "-c", "max_connections=20")
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	t.Cleanup(func() {
		// SIGQUIT to the group: postgres and runuser both exit at once.
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGQUIT)
		_ = srv.Wait()
		logf.Close()
	})
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := pgx.Connect(context.Background(), url)
		if err == nil {
			c.Close(context.Background())
			return url
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("postgres did not accept connections: %v\n%s", err, log)
		}
	}
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

// realLocks reads the advisory rows of pg_locks as LockRows, naming each
// backend by the slot whose pid it is.
func realLocks(t *testing.T, observer *pgx.Conn, slotOfPid map[uint32]Session) []LockRow {
	t.Helper()
	rows, err := observer.Query(context.Background(),
		`SELECT classid::oid::bigint, objid::oid::bigint, objsubid, mode, granted, pid FROM pg_locks WHERE locktype = 'advisory'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []LockRow
	for rows.Next() {
		var classid, objid int64
		var objsubid int16
		var mode string
		var granted bool
		var pid int32
		if err := rows.Scan(&classid, &objid, &objsubid, &mode, &granted, &pid); err != nil {
			t.Fatal(err)
		}
		// lock.c SET_LOCKTAG_ADVISORY: a bigint key is split into
		// classid (high half) and objid (low half) with objsubid 1; a
		// pair is (classid, objid) with objsubid 2.
		r := LockRow{Key: Key{A: classid<<32 | objid}, Session: slotOfPid[uint32(pid)], Granted: granted}
		if objsubid == 2 {
			r.Key = Key{Pair: true, A: int64(int32(classid)), B: int64(int32(objid))}
		}
		if mode == "ShareLock" {
			r.Mode = Shared
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return sortRows(out)
}

func sortRows(rows []LockRow) []LockRow {
	less := func(a, b LockRow) bool {
		return fmt.Sprint(a.Key.Pair, a.Key.A, a.Key.B, a.Session, a.Mode, a.Granted) <
			fmt.Sprint(b.Key.Pair, b.Key.A, b.Key.B, b.Session, b.Mode, b.Granted)
	}
	for i := 1; i < len(rows); i++ {
		for j := i; j > 0 && less(rows[j], rows[j-1]); j-- {
			rows[j], rows[j-1] = rows[j-1], rows[j]
		}
	}
	return rows
}

func describeRows(rows []LockRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "\n  %+v", r)
	}
	return b.String()
}
