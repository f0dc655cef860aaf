package pglock

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/pgnode"
)

// bubbleEnv is an algorithms.Env on the bubble's virtual clock.
type bubbleEnv struct{ rng *rand.Rand }

func (e bubbleEnv) Now() time.Time                       { return time.Now() }
func (e bubbleEnv) Sleep(d time.Duration)                { time.Sleep(d) }
func (e bubbleEnv) Rand() *rand.Rand                     { return e.rng }
func (e bubbleEnv) Context() context.Context             { return context.Background() }
func (e bubbleEnv) Parallel(fns ...func(algorithms.Env)) {}
func (e bubbleEnv) Go(fn func(algorithms.Env))           {}

// client dials srv over pipes (no simulated network: the lock's protocol
// alone).
func client(srv *pgnode.Server, wg *sync.WaitGroup) *Client {
	return &Client{Config: func() *pgx.ConnConfig {
		cfg, _ := pgx.ParseConfig("postgres://app@db:5432/lab?sslmode=disable")
		cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, s := net.Pipe()
			wg.Add(1)
			go func() { defer wg.Done(); _ = srv.Serve(s) }()
			return c, nil
		}
		return cfg
	}}
}

func newLockFor(t *testing.T, c *Client, name string, extra map[string]string) algorithms.Lock {
	t.Helper()
	l, err := algorithms.Build(name, algorithms.Params{Key: "stock", Wait: algorithms.WaitPolicy{Attempts: 3, Delay: time.Second}, Extra: extra}, algorithms.Conns{Backend: c})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The session lock excludes a second client, which gives up after its
// attempts; the fence row hands out growing tokens; an unlock on a
// session that does not hold the lock is reported as a failed release.
func TestSessionLockExcludesAndFences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		srv := pgnode.NewServer()
		env := bubbleEnv{rand.New(rand.NewPCG(1, 2))}
		a := newLockFor(t, client(srv, &wg), "pg-advisory-session", map[string]string{algorithms.ParamTokenSource: "table"})
		b := newLockFor(t, client(srv, &wg), "pg-advisory-session", map[string]string{algorithms.ParamTokenSource: "table"})
		la, err := a.Acquire(env)
		if err != nil || la.FencingToken != 1 {
			t.Fatalf("first acquire: %+v %v, want fence 1", la, err)
		}
		start := time.Now()
		if _, err := b.Acquire(env); !errors.Is(err, algorithms.ErrNotAcquired) {
			t.Fatalf("second acquire while held: %v, want ErrNotAcquired", err)
		}
		if waited := time.Since(start); waited < 2*time.Second {
			t.Fatalf("gave up after %v, want 3 attempts a second apart", waited)
		}
		if err := b.Release(env, la); err == nil || !strings.Contains(err.Error(), "returned false") {
			t.Fatalf("release by a session that does not hold: %v", err)
		}
		if err := a.Release(env, la); err != nil {
			t.Fatal(err)
		}
		lb, err := b.Acquire(env)
		if err != nil || lb.FencingToken != 2 {
			t.Fatalf("acquire after release: %+v %v, want fence 2", lb, err)
		}
		if err := b.Release(env, lb); err != nil {
			t.Fatal(err)
		}
		a.(*Lock).Close(env)
		b.(*Lock).Close(env)
		wg.Wait()
	})
}

// The transaction lock is held from BEGIN to COMMIT: COMMIT releases it.
func TestXactLockEndsWithTheTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		srv := pgnode.NewServer()
		env := bubbleEnv{rand.New(rand.NewPCG(1, 2))}
		a := newLockFor(t, client(srv, &wg), "pg-advisory-xact", nil)
		b := newLockFor(t, client(srv, &wg), "pg-advisory-xact", nil)
		la, err := a.Acquire(env)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(env); !errors.Is(err, algorithms.ErrNotAcquired) {
			t.Fatalf("second acquire inside the holder's transaction: %v", err)
		}
		if err := a.Release(env, la); err != nil {
			t.Fatal(err)
		}
		if len(srv.Locks()) != 0 {
			t.Fatalf("locks after COMMIT: %+v", srv.Locks())
		}
		lb, err := b.Acquire(env)
		if err != nil {
			t.Fatal(err)
		}
		b.Release(env, lb)
		a.(*Lock).Close(env)
		b.(*Lock).Close(env)
		wg.Wait()
	})
}
