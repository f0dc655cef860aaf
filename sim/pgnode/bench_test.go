package pgnode

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// lockCycles runs b.N lock cycles (pg_advisory_lock then
// pg_advisory_unlock of one key) through one pgx connection in its
// default extended-protocol mode.
func lockCycles(b *testing.B, c *pgx.Conn) {
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(42)); err != nil {
			b.Fatal(err)
		}
		var ok bool
		if err := c.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", int64(42)).Scan(&ok); err != nil || !ok {
			b.Fatalf("unlock: %v %v", ok, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchmarkPgxLockCycle compares the simulated server (over an in-memory
// pipe) with a real Postgres 15 on loopback, same client, same cycle.
func BenchmarkPgxLockCycle(b *testing.B) {
	b.Run("sim", func(b *testing.B) {
		lockCycles(b, connect(b, NewServer(), pgx.QueryExecModeCacheStatement))
	})
	b.Run("real-postgres", func(b *testing.B) {
		c, err := pgx.Connect(context.Background(), realPostgres(b))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close(context.Background())
		lockCycles(b, c)
	})
}
