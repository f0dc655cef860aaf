package mysqlnode

import (
	"context"
	"database/sql"
	"testing"
)

// lockCycles runs b.N lock cycles (GET_LOCK then RELEASE_LOCK of one
// name, as prepared statements with parameters, the driver's default)
// through one pinned database/sql connection.
func lockCycles(b *testing.B, db *sql.DB) {
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var got, released int
		if err := c.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", "job", 10).Scan(&got); err != nil || got != 1 {
			b.Fatalf("GET_LOCK: %d %v", got, err)
		}
		if err := c.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", "job").Scan(&released); err != nil || released != 1 {
			b.Fatalf("RELEASE_LOCK: %d %v", released, err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchmarkMySQLLockCycle compares the simulated server (over an
// in-memory pipe) with a real MariaDB 10.11 on loopback, same driver,
// same cycle.
func BenchmarkMySQLLockCycle(b *testing.B) {
	b.Run("sim", func(b *testing.B) {
		lockCycles(b, simDB(b, NewServer(Config{})))
	})
	b.Run("real-mariadb", func(b *testing.B) {
		lockCycles(b, realDB(b, realMariaDB(b)))
	})
}
