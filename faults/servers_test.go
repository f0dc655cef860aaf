package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/sim"
)

// zkNames are the names of a scenario on a three-server ZooKeeper
// ensemble.
var zkNames = Names{Clients: []string{"c1", "c2"}, Others: []string{"store", "zk1", "zk2", "zk3"}, Servers: []string{"zk1", "zk2", "zk3"}}

func TestNodeCrashOnAServerValidates(t *testing.T) {
	at := Duration(time.Second)
	ok := Fault{Kind: NodeCrash, Target: "zk2", At: &at, RestartAfter: Duration(2 * time.Second)}
	if err := ok.Validate(zkNames); err != nil {
		t.Fatalf("node-crash zk2: %v", err)
	}
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: NodeCrash, Target: "zk4", At: &at}, `target: unknown node "zk4"; expected one of zk1, zk2, zk3 (did you mean zk1?)`},
		{Fault{Kind: NodeCrash, Target: "store", At: &at}, `target: unknown node "store"; expected one of zk1, zk2, zk3`},
		{Fault{Kind: NodeCrash, Target: "zk2", At: &at, RestartAfter: Duration(time.Second), Persistence: "always"},
			"persistence: zk2 is a ZooKeeper server, which logs every write to disk before acknowledging it; persistence applies to Redis nodes only: remove it"},
	} {
		err := c.f.Validate(zkNames)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want %q", c.f, err, c.want)
		}
	}
}

type fakeServer struct {
	w      *sim.World
	events *[]string
	name   string
}

func (s fakeServer) Crash()   { *s.events = append(*s.events, s.w.Now().String()+" crash "+s.name) }
func (s fakeServer) Restart() { *s.events = append(*s.events, s.w.Now().String()+" restart "+s.name) }

func TestNodeCrashActsOnAServer(t *testing.T) {
	w := sim.New(1)
	var events []string
	at := Duration(time.Second)
	targets := Targets{Hosts: map[string]*sim.Host{}, Servers: map[string]Server{"zk2": fakeServer{w, &events, "zk2"}}}
	var log []Applied
	Arm(w, targets, Schedule{{Kind: NodeCrash, Target: "zk2", At: &at, RestartAfter: Duration(2 * time.Second)}}, &log)
	if err := w.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(events, ", "); got != "1s crash zk2, 3s restart zk2" {
		t.Fatalf("events %q", got)
	}
	if len(log) != 1 || log[0].At != time.Second || log[0].Until != 3*time.Second {
		t.Fatalf("applied %+v", log)
	}
}

// A compare: run of an algorithm on another backend has none of the hosts
// the schedule names (a host "zk" beside an ensemble's zk3):
// each fault is skipped with a trace line. Arming them dereferenced nil
// (issue 25).
func TestFaultsOnHostsTheRunDoesNotHaveAreSkipped(t *testing.T) {
	w := sim.New(1)
	at := Duration(time.Second)
	targets := Targets{Clients: map[string]*sim.Host{}, Nodes: map[string]*sim.RedisNode{}, Hosts: map[string]*sim.Host{}, Servers: map[string]Server{}}
	var log []Applied
	Arm(w, targets, Schedule{
		{Kind: NodeCrash, Target: "zk3", At: &at, RestartAfter: Duration(time.Second)},
		{Kind: ClockJump, Target: "zk", At: &at, Jump: Duration(time.Second)},
		{Kind: Drift, Target: "zk", At: &at, PPM: 100},
		{Kind: Pause, Target: "c9", At: &at, Duration: Duration(time.Second)},
		{Kind: Failover, Target: "B", At: &at},
	}, &log)
	if err := w.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Errorf("applied %+v; want nothing", log)
	}
	var lines []string
	for _, e := range w.Trace.Entries {
		lines = append(lines, e.Text)
	}
	trace := strings.Join(lines, "\n")
	for _, want := range []string{"skip node-crash zk3", "no zk3 in this run", "no zk in this run", "no c9 in this run", "no B in this run"} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, trace)
		}
	}
}
