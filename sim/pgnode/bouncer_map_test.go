package pgnode

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/jackc/pgx/v5"
)

// mapLog is a client connection at the pooler that records the pooler's
// hand-overs, as sim/dbnet's connections do (event.DBPoolMapped).
type mapLog struct {
	net.Conn
	name string
	mu   *sync.Mutex
	log  *[]string
	ids  map[net.Conn]int // server connection → its number
}

func (c mapLog) Mapped(server net.Conn, what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.ids[server]; !ok {
		c.ids[server] = len(c.ids) + 1
	}
	*c.log = append(*c.log, fmt.Sprintf("%s %s #%d", c.name, what, c.ids[server]))
}

// The pooler records each hand-over on the client's connection: in
// transaction mode c1 is served by backend #1 for its statement and gives
// it back, then c2 is served by the same backend; in session mode the
// backend gets the reset query when its client leaves.
func TestBouncerRecordsItsMapping(t *testing.T) {
	for _, tc := range []struct {
		transaction bool
		want        string
	}{
		{true, "c1 assigned #1, c1 released #1, c2 assigned #1, c2 released #1"},
		{false, "c1 assigned #1, c1 reset #1, c1 released #1, c2 assigned #1, c2 reset #1, c2 released #1"},
	} {
		synctest.Test(t, func(t *testing.T) {
			var wg sync.WaitGroup
			var mu sync.Mutex
			var log []string
			ids := map[net.Conn]int{}
			srv := NewServer()
			b := newBouncer(srv, &wg)
			b.Transaction = tc.transaction
			connect := func(name string) *pgx.Conn {
				cfg, err := pgx.ParseConfig("postgres://" + name + "@pgbouncer:6432/lab?sslmode=disable&default_query_exec_mode=simple_protocol")
				if err != nil {
					t.Fatal(err)
				}
				cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) { return []string{host}, nil }
				cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
					client, server := net.Pipe()
					wg.Add(1)
					go func() { defer wg.Done(); _ = b.Serve(mapLog{server, name, &mu, &log, ids}) }()
					return client, nil
				}
				c, err := pgx.ConnectConfig(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			for _, name := range []string{"c1", "c2"} {
				c := connect(name)
				queryBool(t, c, "SELECT pg_try_advisory_lock(7)")
				c.Close(context.Background())
				synctest.Wait()
			}
			b.Stop()
			wg.Wait()
			if got := strings.Join(log, ", "); got != tc.want {
				t.Errorf("transaction mode %v: hand-overs %q, want %q", tc.transaction, got, tc.want)
			}
		})
	}
}
