package scenarios

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/algorithms/fslock" // registers lockfile-pid, lockfile-excl, flock, fcntl
	"github.com/locklab/locklab/faults"
)

// The file-system backend: lock files and kernel locks through the file
// API of sim/fsnode (docs/filesystem.md). Hosts, which fault schedules
// name:
//
//	nfs   the NFSv4 server (fs: nfs); a node-crash with restart_after
//	      restarts it without its lock state, into its grace period
//
// With fs: local the clients are processes of one host and share its
// kernel (no network between them and the files); with fs: nfs each
// client is a host of its own with its own kernel, mounting the server.
// Client ci runs as PID 100+i. A crashed client is a process that exited:
// locally the kernel drops its locks at once; over NFS its host is gone
// and the server keeps its locks until its lease ends.
//
// Params:
//
//	fs: local          local or nfs
//	lease: 90s         the server's lease time (nfs; Linux nfsd's default)
//	grace: 90s         the grace period after a restart (nfs)
//	drc: true          the server's duplicate-request cache answers a
//	                   retransmission (nfs)
//	timeo: 1s          how long the client waits before retransmitting
//	                   (nfs; nfs(5)'s timeo, 60 s by default over TCP)
//	pid_reuse: c1      clients whose PID another process takes as soon as
//	                   they exit (a PID lock file then looks alive)
func init() {
	b := BackendInfo{Name: fslock.Backend, Hosts: fsHostNames, Crashable: true}
	dur := func(name, example string) algorithms.Param {
		return algorithms.Param{Name: name, Expect: "a duration between 1ms and 24h, such as " + example, Check: func(v string) error {
			if d, err := faults.ParseDuration(v); err != nil || d.D() < time.Millisecond || d.D() > 24*time.Hour {
				return fmt.Errorf("expected a duration between 1ms and 24h, such as %s", example)
			}
			return nil
		}}
	}
	b.Params = []algorithms.Param{
		{Name: "fs", Expect: "local or nfs", Check: algorithms.OneOf("local", "nfs")},
		dur("lease", "90s"), dur("grace", "90s"), dur("timeo", "1s"),
		{Name: "drc", Expect: "true or false", Check: algorithms.BoolParam},
		{Name: "pid_reuse", Expect: "client names, comma-separated, such as c1"},
	}
	b.Metrics = []string{"fs_leases_expired"}
	b.Check = func(s *Scenario, bad func(field, format string, args ...any)) {
		if !IsNFS(s) {
			for _, k := range []string{"lease", "grace", "drc", "timeo"} {
				if _, ok := s.Params[k]; ok {
					bad("params."+k, "%s applies to an NFS mount only; expected fs: nfs beside it, or no %s", k, k)
				}
			}
		}
		checkClientList(s, "pid_reuse", bad)
	}
	RegisterBackend(b)
}

// IsNFS says the lock files are on an NFS mount (params.fs: nfs).
func IsNFS(sc *Scenario) bool { return sc.Params["fs"] == "nfs" }

func fsHostNames(sc *Scenario) []string {
	if IsNFS(sc) {
		return []string{"nfs"}
	}
	return nil
}
