package realredis

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestKillRestartKeepsAcknowledgedWrites checks the fixture itself: a write
// acknowledged with appendfsync always survives kill -9 and restart on the
// same port, and the directory is gone after the test.
func TestKillRestartKeepsAcknowledgedWrites(t *testing.T) {
	var dir string
	t.Run("server", func(t *testing.T) {
		s := Start(t, Options{AppendOnly: true, AppendFsync: "always"})
		dir = s.Dir
		c := s.Client()
		defer c.Close()
		ctx := context.Background()
		if err := c.Set(ctx, "k", "v", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kill -9 and restart took %v", time.Since(start))
		c2 := s.Client()
		defer c2.Close()
		if v, err := c2.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Fatalf("after restart GET k = %q, %v; want \"v\"", v, err)
		}
		if ttl := c2.PTTL(ctx, "k").Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("after restart PTTL k = %v; want within an hour", ttl)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("server directory %s still there after the test: %v", dir, err)
	}
}

// TestSentinelsAreCleanedUp checks the Sentinel fixture: three Sentinels
// monitoring a master agree on its address, and their processes'
// directories (config files Sentinel rewrote included) are gone after the
// test.
func TestSentinelsAreCleanedUp(t *testing.T) {
	var dirs []string
	t.Run("sentinels", func(t *testing.T) {
		master := Start(t, Options{})
		sentinels := StartSentinels(t, master, 3, SentinelOptions{})
		for _, s := range sentinels {
			dirs = append(dirs, s.Dir)
			sc := s.SentinelClient()
			addr, err := sc.GetMasterAddrByName(context.Background(), "mymaster").Result()
			sc.Close()
			if err != nil || len(addr) != 2 || addr[0]+":"+addr[1] != master.Addr() {
				t.Fatalf("sentinel on port %d: master %v, %v; want %s", s.Port, addr, err, master.Addr())
			}
		}
	})
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("sentinel directory %s still there after the test: %v", dir, err)
		}
	}
}
