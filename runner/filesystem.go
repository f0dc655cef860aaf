package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms/fslock" // registers lockfile-pid, lockfile-excl, flock, fcntl
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
	"github.com/locklab/locklab/sim/fsnode"
)

// The file-system backend's run half: the kernels and the NFS server
// built in the world; its params and hosts are scenarios/filesystem.go's.
func init() {
	RegisterBackend(BackendInfo{Name: fslock.Backend, Build: newFSBackend})
}

// fsBackend is the backend of one run.
type fsBackend struct {
	w       *sim.World
	nfs     bool
	local   *fsnode.Kernel // fs: local: the one host's kernel
	srv     *fsnode.Server
	srvHost *sim.Host
	timeo   time.Duration
	reuse   []string
	expired int
}

func newFSBackend(w *sim.World, sc *scenarios.Scenario) (Backend, error) {
	b := &fsBackend{w: w, nfs: scenarios.IsNFS(sc), timeo: paramDuration(sc, "timeo", time.Second), reuse: scenarios.ClientList(sc, "pid_reuse")}
	files := fsnode.NewFS()
	if b.nfs {
		drc := sc.Params["drc"] != "false"
		b.srv = fsnode.NewServer(files, paramDuration(sc, "lease", 90*time.Second), paramDuration(sc, "grace", 90*time.Second), drc)
		b.srvHost = w.NewHost("nfs", nil)
		b.srv.OnEvent = func(e fsnode.ServerEvent) {
			b.expired++
			w.Record("nfs", event.Event{Kind: event.FSLeaseExpired, Node: "nfs", Client: e.Client, Count: e.Count})
		}
	} else {
		st := scheduled{Store: fsnode.Local{FS: files}, w: w}
		b.local = b.kernel("host", st, false)
		b.local.Syscall = st.tick
	}
	return b, nil
}

func (b *fsBackend) kernel(host string, store fsnode.Store, nfs bool) *fsnode.Kernel {
	k := fsnode.NewKernel(host, store, nfs)
	k.OnDrop = func(pid int, ino uint64, kind fsnode.LockKind, why string) {
		b.w.Record(host, event.Event{Kind: event.FSLocksDropped, Client: fmt.Sprintf("pid %d", pid), Key: fsnode.Name(ino), Op: string(kind), Reason: why})
	}
	return k
}

// Connect makes client h a process (PID 100+i) on the shared kernel, or
// on its own host's kernel over the NFS mount.
func (b *fsBackend) Connect(h *sim.Host) any {
	pid := 100
	if _, err := fmt.Sscanf(h.Name, "c%d", &pid); err == nil {
		pid += 100
	}
	k := b.local
	if b.nfs {
		m := &fsnode.Remote{W: b.w, Host: h, Server: "nfs", Srv: b.srv, SrvHost: b.srvHost, Timeo: b.timeo}
		k = b.kernel(h.Name, m, true)
		m.Kernel = k
	}
	k.Start(pid)
	proc := &fsnode.Process{K: k, PID: pid}
	if b.w.Bubble() {
		// A user's lock (scenarios/locktest) calls the file API from
		// outside the kernel; each call goes back in, as the client's
		// process.
		proc.Enter = func(fn func()) { h.Main().Inside(fn) }
	}
	reuse := false
	for _, c := range b.reuse {
		reuse = reuse || c == h.Name
	}
	b.w.OnHostChange(func(ch *sim.Host, c sim.HostChange) {
		if ch != h || c != sim.HostCrashed {
			return
		}
		if !b.nfs {
			// The process exited: its descriptors close, the kernel
			// drops its locks (flock(2), fcntl(2)); a lock file stays.
			proc.Exit()
		}
		if reuse {
			// Another process is given the dead one's PID (PIDs wrap
			// around, proc(5) pid_max): kill(pid, 0) now finds it.
			k.Start(pid)
		}
	})
	return proc
}

func (b *fsBackend) Hosts() []*sim.Host {
	if b.srvHost == nil {
		return nil
	}
	return []*sim.Host{b.srvHost}
}

// Servers is the NFS server, for node-crash.
func (b *fsBackend) Servers() map[string]faults.Server {
	if !b.nfs {
		return map[string]faults.Server{}
	}
	return map[string]faults.Server{"nfs": nfsServer{b}}
}

func (b *fsBackend) Metrics() []Metric {
	return []Metric{{Name: "fs_leases_expired", Value: int64(b.expired)}}
}

// nfsServer crashes and restarts the NFS server: down, nothing reaches
// it; back, it has its files and none of its lock state, and a grace
// period begins (RFC 7530 §9.6.2).
type nfsServer struct{ b *fsBackend }

func (s nfsServer) Crash() { s.b.w.Net.SetDown("nfs", true) }
func (s nfsServer) Restart() {
	b := s.b
	b.w.Net.SetDown("nfs", false)
	b.srv.Restart(fsnode.ServerClock(b.w, b.srvHost))
	b.w.Record("nfs", event.Event{Kind: event.FSServerRestarted, Node: "nfs", Delay: b.srv.Grace})
}

// scheduled is a local file system whose system calls take time: each
// waits a drawn 20–100 µs before it runs, as a process is scheduled and
// runs its call, so that the steps of processes on one host interleave
// (a stale-lock takeover is a race between two processes' calls) in an
// order the seed decides.
type scheduled struct {
	fsnode.Store
	w *sim.World
}

func (s scheduled) tick() {
	p := s.w.Current()
	if p == nil {
		return
	}
	d := 20*time.Microsecond + time.Duration(s.w.Rand().Int64N(int64(80*time.Microsecond)))
	if s.w.Rand().IntN(8) == 0 {
		// Preempted: another process runs for part of a timeslice
		// (CFS's default minimum granularity is a few milliseconds).
		d += time.Duration(s.w.Rand().Int64N(int64(3 * time.Millisecond)))
	}
	p.Sleep(d)
}

// done records the call and its answer, as a command the kernel executed.
func (s scheduled) done(op, args string, err error) {
	if !s.w.Tracing() {
		return
	}
	who := ""
	if p := s.w.Current(); p != nil {
		who = p.Name
	}
	reply := "OK"
	if err != nil {
		reply = strings.SplitN(err.Error(), ":", 2)[0]
	}
	s.w.Record(who, event.Event{Kind: event.CommandExecuted, Node: "kernel", Client: who, Op: op, Command: op + " " + args, Reply: reply})
}

func (s scheduled) Create(name string, excl bool) (uint64, error) {
	s.tick()
	ino, err := s.Store.Create(name, excl)
	s.done("open", fmt.Sprintf("%s O_CREAT excl=%v", name, excl), err)
	return ino, err
}
func (s scheduled) Lookup(name string) (uint64, error) {
	s.tick()
	ino, err := s.Store.Lookup(name)
	s.done("open", name, err)
	return ino, err
}
func (s scheduled) Link(oldname, newname string) error {
	s.tick()
	err := s.Store.Link(oldname, newname)
	s.done("link", oldname+" "+newname, err)
	return err
}
func (s scheduled) Unlink(name string) error {
	s.tick()
	err := s.Store.Unlink(name)
	s.done("unlink", name, err)
	return err
}
func (s scheduled) Stat(name string) (fsnode.Stat, error) {
	s.tick()
	st, err := s.Store.Stat(name)
	s.done("stat", fmt.Sprintf("%s → %s nlink=%d", name, fsnode.Name(st.Ino), st.Nlink), err)
	return st, err
}
func (s scheduled) Read(ino uint64) ([]byte, error) {
	s.tick()
	d, err := s.Store.Read(ino)
	s.done("read", fmt.Sprintf("%s → %q", fsnode.Name(ino), d), err)
	return d, err
}
func (s scheduled) Write(ino uint64, data []byte) error {
	s.tick()
	err := s.Store.Write(ino, data)
	s.done("write", fmt.Sprintf("%s %q", fsnode.Name(ino), data), err)
	return err
}
func (s scheduled) SetLock(l fsnode.Lock) error {
	s.tick()
	err := s.Store.SetLock(l)
	s.done(string(l.Kind), fsnode.Name(l.Ino)+" owner="+l.Owner, err)
	return err
}
func (s scheduled) Unlock(l fsnode.Lock) error {
	err := s.Store.Unlock(l)
	s.done(string(l.Kind)+" unlock", fsnode.Name(l.Ino)+" owner="+l.Owner, err)
	return err
}
