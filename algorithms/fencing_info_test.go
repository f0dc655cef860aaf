package algorithms

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// An algorithm that fences its own leases says so (Info.Fencing), and
// Build then refuses token_source: incr instead of adding a second token per
// grant (issue 33); a decorator algorithm still gets Fenced.
func TestBuildFencingFollowsInfo(t *testing.T) {
	Register(Info{Name: "test-fences-itself", Backend: Backend, MinNodes: 1, Hidden: true, Fencing: FencingBuiltIn,
		New: func(p Params, c Conns) (Lock, error) { return newSetNXPX(p, c, "test-fences-itself", true) }})
	node := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: Build only wraps
	defer node.Close()
	conns := Conns{Redis: []*redis.Client{node}}
	p := Params{Key: "k", Extra: map[string]string{ParamTokenSource: "incr"}}
	_, err := Build("test-fences-itself", p, conns)
	if err == nil || !strings.Contains(err.Error(), "test-fences-itself's fencing is built in; expected token_source: none") {
		t.Fatalf("token_source: incr on a built-in fencer: %v, want a refusal naming it", err)
	}
	lock, err := Build("set-nx-px-lua", p, conns)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := lock.(*Fenced); !ok || f.Key != FenceKey("k") || f.Tokens != node {
		t.Fatalf("set-nx-px-lua with token_source: incr built %T, want *Fenced on the first lock node", lock)
	}
}

// The counter lives on the tokens node, else the first lock node, and
// fence_start seeds it there.
func TestFenceCounterAndSeed(t *testing.T) {
	a, b, tok := new(int), new(int), new(int)
	if n, ok := FenceCounter(tok, []*int{a, b}); !ok || n != tok {
		t.Errorf("with a tokens node: %p, want the tokens node %p", n, tok)
	}
	if n, ok := FenceCounter(nil, []*int{a, b}); !ok || n != a {
		t.Errorf("without a tokens node: %p, want the first lock node %p", n, a)
	}
	if _, ok := FenceCounter[*int](nil, nil); ok {
		t.Error("no node at all: found a counter")
	}
	if args, ok := FenceSeed("k", map[string]string{"fence_start": "32"}); !ok || strings.Join(args, " ") != "SET fence:k 32" {
		t.Errorf("FenceSeed = %q, %v", args, ok)
	}
	if _, ok := FenceSeed("k", nil); ok {
		t.Error("FenceSeed without fence_start: a command")
	}
}
