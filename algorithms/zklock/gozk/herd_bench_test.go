package gozk

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The herd benchmark (issue 13: "the herd scenario (100 waiters) with the
// real client in under 1 s wall on one core").
//
// A Go benchmark cannot host a synctest bubble (synctest.Test takes a
// *testing.T), and running the herd as a subtest of a benchmark would mix
// b.N with the bubble's own bookkeeping. So each iteration re-executes
// this test binary, asking it for TestHerdRealClientOnce alone: ns/op is
// the wall time of a whole run as a user would see it (process start,
// 101 dials, the herd, teardown), and the child reports the wall time of
// its bubble, which the benchmark passes on as bubble-ns/op. The child's
// CPU time (user+system, from the kernel's accounting of the exited
// process) comes out as cpu-ns/op: on a machine shared with other work it
// says more than wall time does.

// herdChildEnv names the environment variable that turns
// TestHerdRealClientOnce on, and says which lock to run: "simple" (every
// waiter watches the holder's node, the herd) or "queue" (go-zookeeper's
// own Lock, each waiter watches its predecessor).
const herdChildEnv = "LOCKLAB_GOZK_HERD_CHILD"

var herdChildProfile = flag.String("gozk.herd-cpuprofile", "", "BenchmarkHerdRealClient: write the CPU profile of the last iteration's child to this file; each sub-benchmark overwrites it, so pick one (-bench HerdRealClient/simple)")

// TestHerdRealClientOnce runs the 100-waiter herd once and prints what the
// benchmark reads. It is skipped unless BenchmarkHerdRealClient started
// it; TestHerdEffect is the ordinary test of the same runs.
func TestHerdRealClientOnce(t *testing.T) {
	which := os.Getenv(herdChildEnv)
	if which == "" {
		t.Skipf("run by BenchmarkHerdRealClient only (it sets %s)", herdChildEnv)
	}
	if which != "simple" && which != "queue" {
		t.Fatalf("%s=%q: want simple or queue", herdChildEnv, which)
	}
	t0 := time.Now()
	o := play(t, herdWorkload(101, which == "simple"), 1)
	wall := time.Since(t0)
	if o.verdict() != "ok" || o.done != 101 {
		t.Fatalf("%s herd: %s, %d/101 rounds", which, o.verdict(), o.done)
	}
	// One line on stdout, outside the test log, so it reads the same
	// with and without -test.v.
	fmt.Printf("herd-child %s bubble-ns=%d notifications=%d messages=%d\n", which, wall.Nanoseconds(), o.notifs, o.messages)
}

// BenchmarkHerdRealClient: 101 go-zookeeper clients on a simulated
// 3-server ensemble each take the lock once (one holder, 100 waiters).
// Run it on one core with
//
//	GOMAXPROCS=1 taskset -c 0 go test ./algorithms/zklock/gozk -run '^$' -bench HerdRealClient -benchtime 10x -count 1
//
// The child gets the benchmark's GOMAXPROCS (so -cpu is honoured).
func BenchmarkHerdRealClient(b *testing.B) {
	for _, which := range []string{"simple", "queue"} {
		b.Run(which, func(b *testing.B) {
			var bubble, cpu time.Duration
			var notifs, messages int64
			for i := 0; i < b.N; i++ {
				args := []string{"-test.run", "^TestHerdRealClientOnce$", "-test.count", "1"}
				if *herdChildProfile != "" && i == b.N-1 {
					args = append(args, "-test.cpuprofile", *herdChildProfile)
				}
				cmd := exec.Command(os.Args[0], args...)
				cmd.Env = append(os.Environ(), herdChildEnv+"="+which, fmt.Sprintf("GOMAXPROCS=%d", runtime.GOMAXPROCS(0)))
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					b.Fatalf("child %s: %v\n%s", which, err, out.String())
				}
				ns, n, m, ok := parseHerdChild(out.String(), which)
				if !ok {
					b.Fatalf("child %s printed no herd-child line:\n%s", which, out.String())
				}
				bubble += time.Duration(ns)
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				notifs, messages = n, m
			}
			b.ReportMetric(float64(bubble.Nanoseconds())/float64(b.N), "bubble-ns/op")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(notifs), "notifications")
			b.ReportMetric(float64(messages), "messages")
		})
	}
}

// parseHerdChild reads the child's "herd-child WHICH bubble-ns=… " line.
func parseHerdChild(out, which string) (ns, notifs, messages int64, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 || f[0] != "herd-child" || f[1] != which {
			continue
		}
		vals := make([]int64, 3)
		for k, key := range []string{"bubble-ns=", "notifications=", "messages="} {
			v, found := strings.CutPrefix(f[2+k], key)
			if !found {
				return 0, 0, 0, false
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, 0, 0, false
			}
			vals[k] = n
		}
		return vals[0], vals[1], vals[2], true
	}
	return 0, 0, 0, false
}
