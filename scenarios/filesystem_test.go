package scenarios

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/sim/event"
)

var fsScenarios = []string{
	"fs-stale-pid-takeover", "fs-stale-pid-takeover-fixed",
	"fs-fcntl-close-other-fd", "fs-fcntl-close-other-fd-fixed",
	"fs-nfs-lease-partition", "fs-nfs-lease-partition-fenced",
}

// Every file-system scenario replays byte for byte at several seeds.
func TestFileSystemScenariosAreDeterministic(t *testing.T) {
	for _, id := range fsScenarios {
		s := mustGet(t, id)
		for _, seed := range []uint64{1, 2, 3} {
			a, b := mustRun(t, s, seed, Options{}), mustRun(t, s, seed, Options{})
			if a.TraceSHA256 != b.TraceSHA256 {
				t.Errorf("%s seed %d: %s then %s", id, seed, a.TraceSHA256, b.TraceSHA256)
			}
			if !a.Matches() {
				t.Errorf("%s seed %d: verdict %+v, expected %+v", id, seed, a.Report.Verdict, s.Expect)
			}
		}
	}
}

// The partitioned holder's lease ends on the server, which drops its lock
// before c2 is granted one; c1 learns only at its unlock.
func TestNFSLeaseExpiryDropsThePartitionedHoldersLock(t *testing.T) {
	r := mustRun(t, mustGet(t, "fs-nfs-lease-partition"), 1, Options{KeepTrace: true})
	var expiredAt, lostAt int64 = -1, -1
	for _, e := range eventsOf(r, event.FSLeaseExpired) {
		if e.Client == "c1" && e.Count == 1 && expiredAt < 0 {
			expiredAt = int64(e.At)
		}
	}
	for _, e := range eventsOf(r, event.ReleaseFailed) {
		if e.Client == "c1" && strings.HasPrefix(e.Reason, "EIO") {
			lostAt = int64(e.At)
		}
	}
	if expiredAt < 0 || lostAt < expiredAt {
		t.Fatalf("c1's lease expiry at %d, c1 told at %d", expiredAt, lostAt)
	}
	if o := r.Report.Witness.MutualExclusion; o == nil || fmt.Sprint(o) == "" || !strings.Contains(fmt.Sprintf("%+v", *o), "c1") {
		t.Errorf("mutual-exclusion witness does not name c1: %+v", o)
	}
}

// The fcntl pitfall: the close of another descriptor drops c1's lock, and
// the drop is an event of c1's process.
func TestCloseOfAnotherDescriptorDropsTheFcntlLock(t *testing.T) {
	r := mustRun(t, mustGet(t, "fs-fcntl-close-other-fd"), 1, Options{KeepTrace: true})
	drops := eventsOf(r, event.FSLocksDropped)
	if len(drops) == 0 || drops[0].Client != "pid 101" || drops[0].Op != "posix" || !strings.HasPrefix(drops[0].Reason, "close of fd") {
		t.Fatalf("drops %+v", drops)
	}
	fixed := mustRun(t, mustGet(t, "fs-fcntl-close-other-fd-fixed"), 1, Options{KeepTrace: true})
	for _, d := range eventsOf(fixed, event.FSLocksDropped) {
		if d.At < drops[0].At+1 && d.Client == "pid 101" {
			t.Errorf("flock dropped by the other descriptor's close: %+v", d)
		}
	}
}
