package mysqlnode

import (
	"context"
	"database/sql"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/locklab/locklab/sim/event"
)

// recording is a client connection whose segments, both ways, are kept
// in the order they were written.
type recording struct {
	net.Conn
	conn int // dial order, which is session order here
	mu   *sync.Mutex
	segs *[]segment
}

type segment struct {
	conn       int
	fromClient bool
	data       []byte
}

func (r recording) Write(p []byte) (int, error) {
	r.mu.Lock()
	*r.segs = append(*r.segs, segment{r.conn, true, append([]byte(nil), p...)})
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// The codec reads what the unmodified driver and the server said: the
// statements with their parameters in place, and the lock facts of the
// replies, text and prepared.
func TestCodecNamesStatementsAndFacts(t *testing.T) {
	srv := NewServer(Config{})
	var mu sync.Mutex
	var segs []segment
	dials := 0
	srv.tap = func(id Session, p []byte) {
		mu.Lock()
		segs = append(segs, segment{int(id), false, append([]byte(nil), p...)})
		mu.Unlock()
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "c1", "tcp", "db1:3306", "lab"
	cfg.Logger = &mysql.NopLogger{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		client, server := net.Pipe()
		mu.Lock()
		dials++
		n := dials
		mu.Unlock()
		go func() { _ = srv.Serve(server) }()
		return recording{client, n, &mu, &segs}, nil
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	c := pinned(t, db)
	other := pinned(t, db)
	ctx := context.Background()
	for _, q := range []struct {
		c     querier
		query string
		args  []any
	}{
		{c, "SELECT GET_LOCK('job', 0)", nil},
		{c, "SELECT GET_LOCK(?, ?)", []any{"job", 0}},
		{other, "SELECT RELEASE_LOCK(?)", []any{"job"}},
		{other, "SELECT RELEASE_LOCK('nobody')", nil},
		{c, "SELECT RELEASE_ALL_LOCKS()", nil},
		{c, "SELECT get_lock(5, 0)", nil},
	} {
		answer(ctx, q.c, q.query, q.args...)
	}
	c.Close()
	other.Close()
	db.Close()

	// Each connection has its codec.
	codecs := map[int]*Codec{}
	var summaries []string
	var facts []event.Event
	mu.Lock()
	defer mu.Unlock()
	for _, s := range segs {
		cd := codecs[s.conn]
		if cd == nil {
			cd = NewCodec()
			codecs[s.conn] = cd
		}
		if s.fromClient {
			cd.Request(s.data)
			continue
		}
		_, sum, f := cd.Reply(s.data)
		summaries = append(summaries, sum)
		facts = append(facts, f...)
	}
	all := strings.Join(summaries, "\n")
	for _, want := range []string{
		"SELECT GET_LOCK('job', 0) → 1",
		"SELECT RELEASE_LOCK('job') → 0",
		"SELECT RELEASE_LOCK('nobody') → NULL",
		"SELECT RELEASE_ALL_LOCKS() → 2",
		"SELECT get_lock(5, 0) → ERROR 4079: Illegal parameter data type int for operation 'get_lock'",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no reply summarized as %q in:\n%s", want, all)
		}
	}
	var kinds []string
	for _, f := range facts {
		kinds = append(kinds, string(f.Kind)+" "+f.Op+" "+f.Key)
	}
	want := "db.lock.granted GET_LOCK job|db.lock.granted GET_LOCK job|db.unlock.notheld RELEASE_LOCK job|db.unlock.notheld RELEASE_LOCK nobody|db.lock.released RELEASE_ALL_LOCKS all|db.lock.refused GET_LOCK "
	if got := strings.Join(kinds, "|"); got != want {
		t.Errorf("facts\n got %s\nwant %s", got, want)
	}
}
