package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim/event"
)

var fsScenarios = []string{
	"fs-stale-pid-takeover", "fs-stale-pid-takeover-fixed",
	"fs-fcntl-close-other-fd", "fs-fcntl-close-other-fd-fixed",
	"fs-nfs-lease-partition", "fs-nfs-lease-partition-fenced",
	"fs-pid-reuse", "fs-pid-reuse-fixed",
	"fs-nfs-lost-create-reply", "fs-nfs-lost-create-reply-fixed",
	"fs-nfs-missed-grace", "fs-nfs-missed-grace-fenced",
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

// After the restart c1, cut off through the grace period, reclaims too
// late: the server refuses (NFS4ERR_NO_GRACE) and c2 holds the lock by
// then; c1's kernel records the loss, its unlock reports EIO.
func TestMissedGracePeriodLosesTheLock(t *testing.T) {
	r := mustRun(t, mustGet(t, "fs-nfs-missed-grace"), 1, Options{KeepTrace: true})
	if len(eventsOf(r, event.FSServerRestarted)) != 1 {
		t.Fatal("no restart")
	}
	lost := eventsOf(r, event.FSLockLost)
	if len(lost) != 1 || lost[0].Client != "c1" || !strings.Contains(lost[0].Reason, "NFS4ERR_NO_GRACE") {
		t.Fatalf("lost %+v", lost)
	}
	var c2Granted bool
	for _, e := range eventsOf(r, event.HoldBegan) {
		c2Granted = c2Granted || (e.Client == "c2" && e.At < lost[0].At)
	}
	if !c2Granted {
		t.Error("c2 was not granted the lock before c1 learned it lost it")
	}
}

// The lost CREATE reply: the retransmission (same XID) answers EEXIST to
// c1, which created the file; with link and stat the creator sees its own
// inode.
func TestLostCreateReplyAnswersEEXISTToTheCreator(t *testing.T) {
	r := mustRun(t, mustGet(t, "fs-nfs-lost-create-reply"), 1, Options{KeepTrace: true})
	var replies []string
	for _, e := range eventsOf(r, event.CommandExecuted) {
		if e.Client == "c1" && e.Command == "CREATE lock GUARDED xid=2" {
			replies = append(replies, e.Reply)
		}
	}
	if strings.Join(replies, ",") != "OK,EEXIST" {
		t.Fatalf("c1's CREATE xid=2 answered %v; want OK then EEXIST", replies)
	}
	if n := len(eventsOf(r, event.HoldBegan)); n != 0 {
		t.Errorf("%d holds; the file is nobody's", n)
	}
	fixed := mustRun(t, mustGet(t, "fs-nfs-lost-create-reply-fixed"), 1, Options{KeepTrace: true})
	if h := eventsOf(fixed, event.HoldBegan); len(h) == 0 || h[0].Client != "c1" {
		t.Errorf("fixed: holds %+v; want c1 first", h)
	}
}

// Bad file-system params are refused with the field, what was expected and
// a did-you-mean; NFS params on a local file system are refused, not
// ignored.
func TestFileSystemScenarioErrors(t *testing.T) {
	base := `id: x
title: x
algorithm: fcntl
ttl: 10s
clients: {count: 2}
`
	for _, tc := range []struct{ yaml, want string }{
		{base + "params: {fs: nsf}\n", `x.yaml:6:14: params.fs: expected local or nfs, found "nsf"`},
		{base + "params: {lease: 10s}\n", `params.lease: lease applies to an NFS mount only`},
		{base + "params: {fs: nfs, lease: 0s}\n", `params.lease: expected a duration between 1ms and 24h`},
		{base + "params: {fs: nfs, drc: maybe}\n", `params.drc: expected true or false`},
		{base + "params: {pid_reuse: c3}\n", `unknown client "c3"`},
		{base + "params: {fencing: incr}\n", `params.fencing: expected file or none`},
		{base + "params: {token_source: incr}\n", `params.token_source: expected file or none`},
		{base + "params: {close_other_fd: soon}\n", `params.close_other_fd: expected a duration after the lock is taken, such as 2s, found "soon"`},
		{base + "params: {leese: 10s}\n", `(did you mean lease?)`},
		{base + "faults: [{kind: node-crash, target: nfs, at: 1s}]\n", `unknown node "nfs"`},
		{base + "faults: [{kind: drop, op: lokc, at: 1s}]\n", `(did you mean LOCK?)`},
		{strings.Replace(base, "fcntl", "lockfile-pid", 1) + "params: {close_other_fd: 1s}\n", `params.close_other_fd`},
	} {
		s, err := scenarios.Parse("x.yaml", []byte(tc.yaml))
		if err == nil {
			err = s.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.yaml, err, tc.want)
		}
	}
}
