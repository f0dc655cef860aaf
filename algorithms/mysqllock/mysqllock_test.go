package mysqllock

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/mysqlnode"
)

// env is a plain Env for code that runs in a synctest bubble: the time
// package's clock is virtual there.
type env struct{ r *rand.Rand }

func (e env) Now() time.Time           { return time.Now() }
func (e env) Sleep(d time.Duration)    { time.Sleep(d) }
func (e env) Rand() *rand.Rand         { return e.r }
func (e env) Context() context.Context { return context.Background() }
func (e env) Parallel(fns ...func(algorithms.Env)) {
	for _, f := range fns {
		f(e)
	}
}
func (e env) Go(fn func(algorithms.Env)) { go fn(e) }

// client is one service's pool into srv.
func client(t *testing.T, srv *mysqlnode.Server) *Client {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "svc", "tcp", "db1:3306", "lab"
	cfg.Logger = &mysql.NopLogger{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, s := net.Pipe()
		go func() { _ = srv.Serve(s) }()
		return c, nil
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{DB: sql.OpenDB(conn)}
}

func lock(t *testing.T, c *Client, extra map[string]string) algorithms.Lock {
	l, err := newLock(algorithms.Params{Key: "job", Wait: algorithms.WaitPolicy{Attempts: 1}, Extra: extra}, algorithms.Conns{Backend: c})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Two workers of one service, each on its pinned connection: the second
// is refused while the first holds, and gets the lock after its release;
// fencing tokens grow.
func TestPinnedWorkersExcludeEachOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := client(t, mysqlnode.NewServer(mysqlnode.Config{}))
		defer c.Close()
		e := env{rand.New(rand.NewPCG(1, 2))}
		a := lock(t, c, map[string]string{"connection": "pinned", algorithms.ParamTokenSource: "table"})
		b := lock(t, c, map[string]string{"connection": "pinned", algorithms.ParamTokenSource: "table"})
		la, err := a.Acquire(e)
		if err != nil || la.FencingToken != 1 {
			t.Fatalf("first acquire: %+v %v, want fence 1", la, err)
		}
		if _, err := b.Acquire(e); !errors.Is(err, algorithms.ErrNotAcquired) {
			t.Fatalf("second worker while the first holds: %v, want ErrNotAcquired", err)
		}
		if err := a.Release(e, la); err != nil {
			t.Fatal(err)
		}
		lb, err := b.Acquire(e)
		if err != nil || lb.FencingToken != 2 {
			t.Fatalf("after the release: %+v %v, want fence 2", lb, err)
		}
		if err := b.Release(e, lb); err != nil {
			t.Fatal(err)
		}
	})
}

// Through the pool, the second worker is handed the first's idle
// connection and granted the lock again; a release that runs on another
// connection says so.
func TestPooledWorkersShareTheHoldersSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := client(t, mysqlnode.NewServer(mysqlnode.Config{}))
		defer c.Close()
		e := env{rand.New(rand.NewPCG(1, 2))}
		a := lock(t, c, map[string]string{"connection": "pool"})
		b := lock(t, c, map[string]string{"connection": "pool"})
		if _, err := a.Acquire(e); err != nil {
			t.Fatal(err)
		}
		lb, err := b.Acquire(e)
		if err != nil {
			t.Fatalf("second worker through the pool: %v, want the re-entrant grant", err)
		}
		// Hold the pool's only connection so that the release opens
		// another.
		busy, err := c.DB.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		err = b.Release(e, lb)
		busy.Close()
		if err == nil || !strings.Contains(err.Error(), `RELEASE_LOCK("job") returned 0`) {
			t.Fatalf("release on another connection: %v, want RELEASE_LOCK returned 0", err)
		}
	})
}
