package gozk

import (
	"strings"
	"testing"

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
		if info.Backend != Backend || !info.Bubble || len(info.Params) != 1 || info.Params[0].Name != "stop_on_disconnect" {
			t.Errorf("%s: %+v", name, info)
		}
		_, err = algorithms.Build(name, algorithms.Params{Key: "lock"}, algorithms.Conns{})
		want := name + " needs a ZooKeeper session (backend zookeeper-ensemble), got <nil>"
		if err == nil || err.Error() != want {
			t.Errorf("%s without a session: %v; want %q", name, err, want)
		}
	}
	_, err := algorithms.Build("gozk-lock", algorithms.Params{Key: "lock", Extra: map[string]string{"stop_on_disconnect": "maybe"}},
		algorithms.Conns{Backend: &Session{Conn: &zk.Conn{}}})
	if err == nil || !strings.Contains(err.Error(), `gozk-lock: params.stop_on_disconnect: expected true or false, got "maybe"`) {
		t.Fatalf("bad stop_on_disconnect: %v", err)
	}
}
