package mysqlnode

import (
	"bytes"
	"context"
	"database/sql"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Issue 32, item 7: go-sql-driver sends its process id (_pid) among the
// connection attributes of its handshake response, so the bytes a run
// carries, and the work budget that counts them, differed between two
// processes running the same seed (258670 or 258675 for a 1000-client
// scenario). The simulated server declines CLIENT_CONNECT_ATTRS: no
// attribute, and nothing of the process, goes on the simulated wire.
func TestClientSendsNothingOfItsProcess(t *testing.T) {
	srv := NewServer(Config{})
	var mu sync.Mutex
	var segs []segment
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "c1", "tcp", "db1:3306", "lab"
	cfg.Logger = &mysql.NopLogger{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		go func() { _ = srv.Serve(server) }()
		return recording{client, 1, &mu, &segs}, nil
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var got int
	if err := db.QueryRow("SELECT GET_LOCK('job', 0)").Scan(&got); err != nil || got != 1 {
		t.Fatalf("GET_LOCK: %d, %v", got, err)
	}
	db.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(segs) == 0 {
		t.Fatal("no segment recorded")
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for i, s := range segs {
		if bytes.Contains(s.data, []byte("_pid")) || bytes.Contains(s.data, []byte("_client_name")) || (len(pid) > 3 && bytes.Contains(s.data, pid)) {
			t.Fatalf("segment %d from the client carries connection attributes (the process id): %q", i, s.data)
		}
	}
}
