package gozk

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/locklab/locklab/algorithms"
)

// Every recipe is registered for the ensemble backend and the bubble
// runtime, and refuses a client handle that is not a ZooKeeper session.
func TestAlgorithmsAreRegistered(t *testing.T) {
	for _, name := range []string{"gozk-lock", "gozk-queue", "gozk-queue-naive", "gozk-reentrant", "gozk-simple"} {
		info, err := algorithms.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		var params []string
		for _, p := range info.Params {
			params = append(params, p.Name)
		}
		want := "stop_on_disconnect"
		if name == "gozk-queue" || name == "gozk-queue-naive" {
			want += " replace_handle_on_lost lost_after"
		}
		if info.Backend != Backend || !info.Bubble || strings.Join(params, " ") != want {
			t.Errorf("%s: %+v; want params %s", name, info, want)
		}
		_, err = algorithms.Build(name, algorithms.Params{Key: "lock"}, algorithms.Conns{})
		want = name + " needs a ZooKeeper session (backend zookeeper-ensemble), got <nil>"
		if err == nil || err.Error() != want {
			t.Errorf("%s without a session: %v; want %q", name, err, want)
		}
	}
	_, err := algorithms.Build("gozk-lock", algorithms.Params{Key: "lock", Extra: map[string]string{"stop_on_disconnect": "maybe"}},
		algorithms.Conns{Backend: &Session{Conn: &zk.Conn{}}})
	if err == nil || !strings.Contains(err.Error(), `gozk-lock: params.stop_on_disconnect: expected true or false, got "maybe"`) {
		t.Fatalf("bad stop_on_disconnect: %v", err)
	}
	// replace_handle_on_lost: bad values, lost_after alone, a recipe that
	// cannot go on in a new session, a backend that cannot replace.
	sess := &Session{Conn: &zk.Conn{}, OnEvent: func(func(zk.Event)) {}}
	for _, c := range []struct {
		name  string
		extra map[string]string
		want  string
	}{
		{"gozk-queue", map[string]string{"replace_handle_on_lost": "sometimes"}, `gozk-queue: params.replace_handle_on_lost: expected true or false, got "sometimes"`},
		{"gozk-queue-naive", map[string]string{"lost_after": "2s"}, "gozk-queue-naive: params.lost_after is the delay before the handle is replaced; it needs params.replace_handle_on_lost: true"},
		{"gozk-queue", map[string]string{"replace_handle_on_lost": "true", "lost_after": "soon"}, `gozk-queue: params.lost_after: a duration between 1ms and 1h, such as 4s, got "soon"`},
		{"gozk-queue", map[string]string{"replace_handle_on_lost": "true"}, "gozk-queue: params.replace_handle_on_lost: the backend cannot replace a client's handle"},
		{"gozk-lock", map[string]string{"replace_handle_on_lost": "true", "lost_after": "1s"}, "gozk-lock: params.replace_handle_on_lost: the backend cannot replace a client's handle"},
	} {
		_, err := algorithms.Build(c.name, algorithms.Params{Key: "lock", Extra: c.extra}, algorithms.Conns{Backend: sess})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s %v: %v; want %q", c.name, c.extra, err, c.want)
		}
	}
	full := &Session{Conn: &zk.Conn{}, OnEvent: func(func(zk.Event)) {}, Notify: func(fn func()) { fn() },
		After:   func(time.Duration, func()) func() { return func() {} },
		Replace: func(string) <-chan *zk.Conn { return nil }, SessionTimeout: 4 * time.Second}
	_, err = algorithms.Build("gozk-simple", algorithms.Params{Key: "lock", Extra: map[string]string{"replace_handle_on_lost": "true"}}, algorithms.Conns{Backend: full})
	if want := "gozk-simple: params.replace_handle_on_lost: only the queue recipes (gozk-queue, gozk-queue-naive) go on in a new session"; err == nil || err.Error() != want {
		t.Errorf("gozk-simple with replace_handle_on_lost: %v; want %q", err, want)
	}
	if _, err := algorithms.Build("gozk-queue-naive", algorithms.Params{Key: "lock", Extra: map[string]string{"replace_handle_on_lost": "true", "lost_after": "2s"}}, algorithms.Conns{Backend: full}); err != nil {
		t.Errorf("gozk-queue-naive with replace_handle_on_lost: %v", err)
	}
}
