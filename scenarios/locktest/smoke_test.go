package locktest_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/scenarios"
	"github.com/redis/go-redis/v9"
)

type rsLock struct{ m *redsync.Mutex }

func (l *rsLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	start := env.Now()
	var err error
	env.(interface{ Outside(func()) }).Outside(func() { err = l.m.LockContext(env.Context()) })
	if err != nil {
		return nil, algorithms.ErrNotAcquired
	}
	return &algorithms.Lease{Resource: "lock", Start: start, Validity: start.Add(8 * time.Second)}, nil
}
func (l *rsLock) Release(env algorithms.Env, _ *algorithms.Lease) error {
	var err error
	env.(interface{ Outside(func()) }).Outside(func() { _, err = l.m.UnlockContext(env.Context()) })
	return err
}

func TestSmokeRedsync(t *testing.T) {
	var digests []string
	var nf int
	for i := 0; i < 2; i++ {
		nf = 0
		synctest.Test(t, func(t *testing.T) {
			sc, err := scenarios.MatrixScenario(algorithms.Custom)
			if err != nil {
				t.Fatal(err)
			}
			sc.Nodes = nil
			for _, n := range []string{"A", "B", "C", "D", "E"} {
				sc.Nodes = append(sc.Nodes, scenarios.Node{Name: n})
			}
			sc.Clients.Count = 5
			sc.Duration = scenarios.Duration(10 * time.Second)
			f := func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
				k := 0
				nf++
				id := nf
				var pools []redsyncredis.Pool
				for _, cl := range c.Redis {
					pools = append(pools, goredis.NewPool(cl))
				}
				return &rsLock{m: redsync.New(pools...).NewMutex("lock", redsync.WithExpiry(2*time.Second), redsync.WithRetryDelay(100*time.Millisecond), redsync.WithGenValueFunc(func() (string, error) { k++; return fmt.Sprintf("v%d-%d", id, k), nil }))}, nil
			}
			_ = context.Background
			_ = redis.Nil
			start := time.Now()
			res, err := scenarios.Run(sc, 7, scenarios.Options{Factory: f, Bubble: true, KeepTrace: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("virtual %v verdict %+v lines %d sha %s", time.Since(start), res.Report.Verdict, res.TraceLines, res.TraceSHA256)
			digests = append(digests, res.TraceSHA256)
			for _, e := range res.Trace[:0] {
				t.Log(e.String())
			}
		})
	}
	if digests[0] != digests[1] {
		t.Fatal("digests differ")
	}
}
