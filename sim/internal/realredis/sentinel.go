package realredis

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelOptions configure the Sentinels of StartSentinels.
type SentinelOptions struct {
	// MasterName is the name the Sentinels monitor the master under
	// ("mymaster" when empty).
	MasterName string
	// Quorum is how many Sentinels must agree that the master is down
	// (a majority of them when 0).
	Quorum int
	// DownAfter is how long the master must not answer before a Sentinel
	// thinks it down (1 s when 0; Redis's default is 30 s).
	DownAfter time.Duration
	// FailoverTimeout bounds a failover attempt (10 s when 0; Redis's
	// default is 3 min). Sentinel waits twice this before it tries again
	// after a failed attempt.
	FailoverTimeout time.Duration
}

// sentinelConf is what a Sentinel's config file says.
type sentinelConf struct {
	master   string
	quorum   int
	addr     string // the monitored master, host:port
	host     string
	port     int
	down     time.Duration
	failover time.Duration
	written  int // the port the file was written for, 0 before
}

// StartSentinels runs n Sentinels (redis-server --sentinel, which is what
// redis-sentinel is) monitoring master, each on a free port in its own
// temporary directory and config file, killed and removed by t.Cleanup.
// It returns once every Sentinel answers PING and knows the n-1 others and
// the master's replicas (they find each other through the master's
// __sentinel__:hello channel, every 2 s), so a failover can be voted.
// Sentinels without redis-server skip the test, or fail it under CI=true
// (Binary).
func StartSentinels(t testing.TB, master *Server, n int, o SentinelOptions) []*Server {
	t.Helper()
	bin := Binary(t)
	if o.MasterName == "" {
		o.MasterName = "mymaster"
	}
	if o.Quorum == 0 {
		o.Quorum = n/2 + 1
	}
	if o.DownAfter == 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout == 0 {
		o.FailoverTimeout = 10 * time.Second
	}
	var out []*Server
	for range n {
		s := &Server{bin: bin, sentinel: &sentinelConf{
			master: o.MasterName, quorum: o.Quorum, host: "127.0.0.1", port: master.Port,
			down: o.DownAfter, failover: o.FailoverTimeout,
		}}
		launch(t, s)
		out = append(out, s)
	}
	// Replicas the master reports (INFO replication) are the ones the
	// Sentinels must learn too.
	mc := master.Client()
	defer mc.Close()
	replicas := countReplicas(mc.Info(context.Background(), "replication").Val())
	deadline := time.Now().Add(2 * time.Minute)
	for _, s := range out {
		sc := s.SentinelClient()
		for {
			others, err1 := sc.Sentinels(context.Background(), o.MasterName).Result()
			reps, err2 := sc.Replicas(context.Background(), o.MasterName).Result()
			if err1 == nil && err2 == nil && len(others) == n-1 && len(reps) >= replicas {
				break
			}
			if time.Now().After(deadline) {
				sc.Close()
				t.Fatalf("realredis: sentinel on port %d knows %d other sentinels (%v) and %d replicas (%v) after 2 min; want %d and %d: %s",
					s.Port, len(others), err1, len(reps), err2, n-1, replicas, s.logTail())
			}
			time.Sleep(50 * time.Millisecond)
		}
		sc.Close()
	}
	return out
}

// countReplicas reads connected_slaves from INFO replication.
func countReplicas(info string) int {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// sentinelArgs writes the config file (Sentinel insists on one it can
// rewrite) for the current port and runs from it.
func (s *Server) sentinelArgs() []string {
	c := s.sentinel
	path := filepath.Join(s.Dir, "sentinel.conf")
	if c.written != s.Port {
		conf := fmt.Sprintf(`port %d
bind 127.0.0.1
protected-mode yes
daemonize no
dir %s
logfile sentinel.log
sentinel monitor %s %s %d %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, s.Port, s.Dir, c.master, c.host, c.port, c.quorum,
			c.master, c.down.Milliseconds(), c.master, c.failover.Milliseconds(), c.master)
		// A failed write shows up as the Sentinel's refusal to start,
		// with its log quoted.
		os.WriteFile(path, []byte(conf), 0o600)
		c.written = s.Port
	}
	return []string{path, "--sentinel"}
}

// SentinelClient is a go-redis Sentinel client for this Sentinel.
func (s *Server) SentinelClient() *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{
		Addr:            s.Addr(),
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		DialTimeout:     5 * time.Second,
		ReadTimeout:     10 * time.Second,
		WriteTimeout:    10 * time.Second,
	})
}

// FailoverOptions are go-redis failover-client options for these
// Sentinels, with the protocol settings of Client; PoolSize, timeouts and
// retries are the caller's to change.
func FailoverOptions(master string, sentinels []*Server) *redis.FailoverOptions {
	var addrs []string
	for _, s := range sentinels {
		addrs = append(addrs, s.Addr())
	}
	return &redis.FailoverOptions{
		MasterName:      master,
		SentinelAddrs:   addrs,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		PoolSize:        1,
		DialTimeout:     5 * time.Second,
		ReadTimeout:     10 * time.Second,
		WriteTimeout:    10 * time.Second,
	}
}
