package mssqlnode

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	mssql "github.com/microsoft/go-mssqldb"

	"github.com/locklab/locklab/sim/event"
)

// tap runs one connection's bytes through a Codec, as sim/dbnet does: the
// driver's packets are requests, the server's replies; the lock facts
// the replies state are collected.
type tap struct {
	net.Conn
	codec *Codec
	reply bool
	mu    *sync.Mutex
	facts *[]string
}

func (c tap) Write(b []byte) (int, error) {
	c.mu.Lock()
	if c.reply {
		_, _, facts := c.codec.Reply(b)
		for _, f := range facts {
			*c.facts = append(*c.facts, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", f.Kind, f.Op, f.Key, f.Reason)))
		}
	} else {
		c.codec.Request(b)
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

type tapDialer struct {
	pipeDialer
	mu    *sync.Mutex
	facts *[]string
}

func (d tapDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	codec := NewCodec()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		_ = d.srv.Serve(tap{server, codec, true, d.mu, d.facts})
	}()
	return tap{client, codec, false, d.mu, d.facts}, nil
}

// The codec states, from the replies' tokens alone, what the server did
// with the lock: a grant (sp_getapplock 0), a refusal with the code (-1),
// a release (sp_releaseapplock 0) and an unlock of a lock not held (its
// error), the Transaction owner's lock released by COMMIT, the code of a
// procedure called by name (its RETURNSTATUS), and a pooled
// session's lock released by the next request's reset-connection flag.
func TestCodecLockFacts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := NewServer("db1", nil)
		wg := &sync.WaitGroup{}
		var mu sync.Mutex
		var facts []string
		c, err := mssql.NewConnector("sqlserver://sa:x@db1?database=locklab&encrypt=disable&dial+timeout=5")
		if err != nil {
			t.Fatal(err)
		}
		c.Dialer = tapDialer{pipeDialer{srv: srv, wg: wg}, &mu, &facts}
		db := sql.OpenDB(c)
		defer func() { db.Close(); srv.Stop(); wg.Wait() }()
		ctx := context.Background()
		cs := conns(t, db, 2)
		get(t, cs[0], "lock", "Exclusive", "Session", 0)
		get(t, cs[1], "lock", "Exclusive", "Session", 10)
		rel := `DECLARE @r int; EXEC @r = sp_releaseapplock @Resource = @p1, @LockOwner = @p2; SELECT @r`
		var r int
		if err := cs[0].QueryRowContext(ctx, rel, "lock", "Session").Scan(&r); err != nil || r != 0 {
			t.Fatalf("release: %d %v", r, err)
		}
		_ = cs[1].QueryRowContext(ctx, rel, "lock", "Session").Scan(&r) // not held: an error
		tx, err := cs[1].BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		get(t, tx, "lock", "Exclusive", "Transaction", 0)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// Called by name (RPC): the code is the RETURNSTATUS.
		var rs mssql.ReturnStatus
		if _, err := cs[0].ExecContext(ctx, "sp_getapplock", sql.Named("Resource", "rpc"), sql.Named("LockMode", "Exclusive"), sql.Named("LockOwner", "Session"), &rs); err != nil || rs != 0 {
			t.Fatalf("sp_getapplock by RPC: %d %v", rs, err)
		}
		if _, err := cs[0].ExecContext(ctx, "sp_releaseapplock", sql.Named("Resource", "rpc"), sql.Named("LockOwner", "Session"), &rs); err != nil || rs != 0 {
			t.Fatalf("sp_releaseapplock by RPC: %d %v", rs, err)
		}
		cs[0].Close()
		cs[1].Close()
		db.SetMaxOpenConns(1)
		get(t, db, "pool", "Exclusive", "Session", 0)
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&r); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{
			string(event.DBLockGranted) + " sp_getapplock lock",
			string(event.DBLockRefused) + " sp_getapplock lock sp_getapplock returned -1",
			string(event.DBLockReleased) + " sp_releaseapplock lock",
			string(event.DBUnlockNotHeld) + " sp_releaseapplock lock Cannot release the application lock (Database Principal: 'public', Resource: 'lock') because it is not currently held.",
			string(event.DBLockGranted) + " sp_getapplock lock",
			string(event.DBLockReleased) + " COMMIT lock",
			string(event.DBLockGranted) + " sp_getapplock rpc",
			string(event.DBLockReleased) + " sp_releaseapplock rpc",
			string(event.DBLockGranted) + " sp_getapplock pool",
			string(event.DBLockReleased) + " sp_reset_connection pool",
		}
		if strings.Join(facts, "\n") != strings.Join(want, "\n") {
			t.Errorf("facts:\n%s\nwant:\n%s", strings.Join(facts, "\n"), strings.Join(want, "\n"))
		}
	})
}
