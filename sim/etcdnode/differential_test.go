package etcdnode

// Differential test: the same clientv3 code against a real etcd (the
// embeddable server, go.etcd.io/etcd/server/v3/embed, v3.7.3, started here
// on 127.0.0.1 with free ports and a temporary directory) and against the
// simulated cluster of one member, comparing what the client sees:
// replies, revisions (counted from the first write), versions, create and
// mod revisions, lease TTLs and the order in which two sessions get the
// mutex. It is a Go module: nothing to install, so it runs everywhere,
// CI included.

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/locklab/locklab/sim"
)

// script runs the vocabulary against cli and says what it saw, one line
// per step. Revisions are printed relative to base, the revision before
// the first write.
func script(ctx context.Context, cli *clientv3.Client) []string {
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	g, err := cli.Get(ctx, "a")
	if err != nil {
		return []string{"get: " + err.Error()}
	}
	base := g.Header.Revision
	rel := func(r int64) int64 {
		if r == 0 {
			return 0
		}
		return r - base
	}
	kv := func(label string, r *clientv3.GetResponse, err error) {
		if err != nil {
			say("%s: %v", label, err)
			return
		}
		var parts []string
		for _, k := range r.Kvs {
			parts = append(parts, fmt.Sprintf("%s=%s c%d m%d v%d lease:%v", k.Key, k.Value, rel(k.CreateRevision), rel(k.ModRevision), k.Version, k.Lease != 0))
		}
		say("%s: rev %d count %d more %v [%s]", label, rel(r.Header.Revision), r.Count, r.More, strings.Join(parts, "; "))
	}
	for _, v := range []string{"1", "2"} {
		p, err := cli.Put(ctx, "a", v, clientv3.WithPrevKV())
		if err != nil {
			say("put a=%s: %v", v, err)
			continue
		}
		prev := "none"
		if p.PrevKv != nil {
			prev = string(p.PrevKv.Value)
		}
		say("put a=%s: rev %d prev %s", v, rel(p.Header.Revision), prev)
	}
	r, err := cli.Get(ctx, "a")
	kv("get a", r, err)
	for i := 0; i < 2; i++ {
		t, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision("b"), "=", 0)).
			Then(clientv3.OpPut("b", "x"), clientv3.OpGet("b")).Else(clientv3.OpGet("b")).Commit()
		if err != nil {
			say("txn %d: %v", i, err)
			continue
		}
		last := t.Responses[len(t.Responses)-1].GetResponseRange()
		say("txn %d: succeeded %v rev %d b created %d", i, t.Succeeded, rel(t.Header.Revision), rel(last.Kvs[0].CreateRevision))
	}
	t, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Value("a"), ">", "1"), clientv3.Compare(clientv3.Version("a"), "=", 2)).
		Then(clientv3.OpDelete("b", clientv3.WithPrevKV())).Commit()
	if err == nil {
		say("txn compare value/version: succeeded %v rev %d deleted %d", t.Succeeded, rel(t.Header.Revision), t.Responses[0].GetResponseDeleteRange().Deleted)
	} else {
		say("txn compare: %v", err)
	}
	lg, err := cli.Grant(ctx, 10)
	if err != nil {
		say("grant: %v", err)
		return out
	}
	say("grant 10: ttl %d", lg.TTL)
	small, err := cli.Grant(ctx, 1)
	if err == nil {
		say("grant 1: ttl %d", small.TTL)
	}
	_, err = cli.Put(ctx, "c", "leased", clientv3.WithLease(lg.ID))
	say("put c with lease: %v", err)
	ttl, err := cli.TimeToLive(ctx, lg.ID, clientv3.WithAttachedKeys())
	if err == nil {
		say("ttl: granted %d left>=9 %v keys %q", ttl.GrantedTTL, ttl.TTL >= 9, ttl.Keys)
	}
	_, err = cli.Put(ctx, "d", "x", clientv3.WithLease(clientv3.LeaseID(12345)))
	say("put with unknown lease: %v", err)
	r, err = cli.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(2))
	kv("get all, newest first, limit 2", r, err)
	_, err = cli.Revoke(ctx, lg.ID)
	say("revoke: %v", err)
	r, err = cli.Get(ctx, "c")
	kv("get c after revoke", r, err)
	_, err = cli.Revoke(ctx, lg.ID)
	say("revoke again: %v", err)
	r, err = cli.Get(ctx, "a", clientv3.WithRev(base+1))
	kv("get a at the first write", r, err)
	out = append(out, mutexOrder(ctx, cli)...)
	return out
}

// mutexOrder: s1 takes the mutex, s2's TryLock fails, s2's Lock waits,
// s1 releases, s2 gets it.
func mutexOrder(ctx context.Context, cli *clientv3.Client) []string {
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		return []string{"session: " + err.Error()}
	}
	defer s1.Close()
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		return []string{"session: " + err.Error()}
	}
	defer s2.Close()
	m1, m2 := concurrency.NewMutex(s1, "/m"), concurrency.NewMutex(s2, "/m")
	var order []string
	if err := m1.Lock(ctx); err != nil {
		return []string{"lock 1: " + err.Error()}
	}
	order = append(order, "s1 locked")
	if err := concurrency.NewMutex(s2, "/m").TryLock(ctx); err != nil {
		order = append(order, "s2 trylock: "+err.Error())
	}
	done := make(chan error, 1)
	go func() { done <- m2.Lock(ctx) }()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-done:
		order = append(order, "s2 locked while s1 held")
	default:
	}
	_ = m1.Unlock(ctx)
	order = append(order, "s1 unlocked")
	if err := <-done; err != nil {
		order = append(order, "lock 2: "+err.Error())
	} else {
		c1, c2 := m1.IsOwner(), m2.IsOwner()
		order = append(order, fmt.Sprintf("s2 locked, key newer: %v", c2.GetCompare().GetCreateRevision() > c1.GetCompare().GetCreateRevision()))
	}
	_ = m2.Unlock(ctx)
	return order
}

func freeURL(t *testing.T) *url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return &url.URL{Scheme: "http", Host: l.Addr().String()}
}

// realEtcd starts an embedded etcd and returns a client of it.
func realEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "real"
	cfg.Dir = t.TempDir()
	cfg.Logger, cfg.LogLevel = "zap", "error"
	peer, client := freeURL(t), freeURL(t)
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.InitialCluster = cfg.Name + "=" + peer.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(20 * time.Second):
		t.Fatal("embedded etcd not ready after 20 s")
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client.Host}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func TestDifferentialAgainstEmbeddedEtcd(t *testing.T) {
	cli := realEtcd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	real := script(ctx, cli)

	var simulated []string
	inBubble(t, 1, Config{Members: 1}, func(w *sim.World, c *Cluster) {
		h := w.NewHost("c1", nil)
		h.Spawn("c1", 10*time.Millisecond, func(p *sim.Process) {
			p.Outside(func() {
				cli, err := c.NewClient(h, clientv3.Config{})
				if err != nil {
					simulated = []string{err.Error()}
					return
				}
				ctx, cancel := context.WithTimeout(p.Context(), 30*time.Second)
				defer cancel()
				simulated = script(ctx, cli)
			})
		})
		if err := w.Run(time.Minute); err != nil {
			t.Fatalf("run: %v", err)
		}
	})
	if !slices.Equal(real, simulated) {
		var b strings.Builder
		for i := 0; i < max(len(real), len(simulated)); i++ {
			r, s := "", ""
			if i < len(real) {
				r = real[i]
			}
			if i < len(simulated) {
				s = simulated[i]
			}
			mark := "  "
			if r != s {
				mark = "≠ "
			}
			fmt.Fprintf(&b, "%sreal: %s\n  sim:  %s\n", mark, r, s)
		}
		t.Fatalf("the simulated cluster differs from etcd 3.7.3:\n%s", b.String())
	}
	t.Logf("%d steps agree:\n%s", len(real), strings.Join(real, "\n"))
}
