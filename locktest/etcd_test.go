package locktest

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// liveSession keeps *s a session whose lease is alive: a session whose
// lease is gone (Done) is replaced by a new one with a 2 s TTL.
func liveSession(cli *clientv3.Client, s **concurrency.Session) error {
	if *s != nil {
		select {
		case <-(*s).Done(): // the lease is gone: a new session
			*s = nil
		default:
		}
	}
	if *s == nil {
		ns, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
		if err != nil {
			return err
		}
		*s = ns
	}
	return nil
}

// etcdMutex is the lock a service writes with etcd's concurrency package:
// a session whose lease lives for the TTL, and concurrency.Mutex on it.
type etcdMutex struct {
	cli *clientv3.Client
	s   *concurrency.Session
	m   *concurrency.Mutex
}

func (l *etcdMutex) Lock(ctx context.Context) error {
	if err := liveSession(l.cli, &l.s); err != nil {
		return err
	}
	l.m = concurrency.NewMutex(l.s, "/locktest")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := l.m.Lock(ctx)
	if err == concurrency.ErrSessionExpired {
		l.s = nil
	}
	return err
}

func (l *etcdMutex) Unlock(ctx context.Context) error { return l.m.Unlock(ctx) }

// etcdElection is concurrency.Election used as a lock, as leader election
// often is: Campaign to take it, Resign to give it back, on a session
// whose lease lives for the TTL.
type etcdElection struct {
	cli *clientv3.Client
	s   *concurrency.Session
	e   *concurrency.Election
}

func (l *etcdElection) Lock(ctx context.Context) error {
	if err := liveSession(l.cli, &l.s); err != nil {
		return err
	}
	l.e = concurrency.NewElection(l.s, "/locktest-election")
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return l.e.Campaign(ctx, "worker")
}

func (l *etcdElection) Unlock(ctx context.Context) error { return l.e.Resign(ctx) }

// RunEtcd hands each client an unmodified clientv3 client of the
// simulated cluster; concurrency.Mutex, unfenced, lets two workers hold
// when a holder pauses past its session's TTL: the pause class finds it
// and shrinks it to a pause.
func TestRunEtcdFindsThePausedHolder(t *testing.T) {
	got := observeFindings(t)
	RunEtcd(t, func(cli *clientv3.Client) Lock { return &etcdMutex{cli: cli} }, Options{
		TTL: 2 * time.Second, Classes: []Class{Pause}, Runs: 20, ShrinkRuns: 20,
		Expect: Expect{Pause: MutualExclusion | Resource},
	})
	f, ok := got[Pause]
	if !ok {
		t.Fatal("the pause class did not run")
	}
	if f.prop&MutualExclusion == 0 {
		t.Fatalf("pause: %s, want two holders\n%s", f.prop.found(), describe(t, Pause, f))
	}
	d := describe(t, Pause, f)
	if !strings.Contains(d, "pause") {
		t.Fatalf("the counterexample has no pause:\n%s", d)
	}
	t.Logf("pause, after %d runs:\n%s", f.runs, d)
}
