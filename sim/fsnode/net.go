package fsnode

import (
	"errors"
	"time"

	"github.com/locklab/locklab/sim"
	"github.com/locklab/locklab/sim/event"
)

// Process is one process's view of its kernel: the file API lock
// algorithms call (a file-system handle). Every call is a system call of
// process PID.
type Process struct {
	K   *Kernel
	PID int
	// Enter, when set, runs each call inside the simulation: a user's
	// lock (scenarios/locktest) runs outside the kernel, and a call,
	// which may wait on the network or the scheduler, must not.
	Enter func(func())
}

func do[T any](p *Process, f func() T) T {
	if p.Enter == nil {
		return f()
	}
	var r T
	p.Enter(func() { r = f() })
	return r
}

type result[T any] struct {
	v   T
	err error
}

func do2[T any](p *Process, f func() (T, error)) (T, error) {
	r := do(p, func() result[T] { v, err := f(); return result[T]{v, err} })
	return r.v, r.err
}

func (p *Process) Open(name string) (int, error) {
	return do2(p, func() (int, error) { return p.K.Open(p.PID, name, false, false) })
}
func (p *Process) OpenCreate(name string) (int, error) {
	return do2(p, func() (int, error) { return p.K.Open(p.PID, name, true, false) })
}
func (p *Process) CreateExcl(name string) (int, error) {
	return do2(p, func() (int, error) { return p.K.Open(p.PID, name, true, true) })
}
func (p *Process) Dup(fd int) (int, error) {
	return do2(p, func() (int, error) { return p.K.Dup(p.PID, fd) })
}
func (p *Process) Close(fd int) error { return do(p, func() error { return p.K.Close(p.PID, fd) }) }
func (p *Process) Read(fd int) ([]byte, error) {
	return do2(p, func() ([]byte, error) { return p.K.Read(p.PID, fd) })
}
func (p *Process) Write(fd int, data []byte) error {
	return do(p, func() error { return p.K.Write(p.PID, fd, data) })
}
func (p *Process) Flock(fd int, excl bool) error {
	return do(p, func() error { return p.K.Flock(p.PID, fd, excl) })
}
func (p *Process) Unflock(fd int) error { return do(p, func() error { return p.K.Unflock(p.PID, fd) }) }
func (p *Process) Fcntl(fd int, excl bool) error {
	return do(p, func() error { return p.K.Fcntl(p.PID, fd, excl) })
}
func (p *Process) Unfcntl(fd int) error { return do(p, func() error { return p.K.Unfcntl(p.PID, fd) }) }
func (p *Process) Link(oldname, newname string) error {
	return do(p, func() error { return p.K.Link(oldname, newname) })
}
func (p *Process) Unlink(name string) error { return do(p, func() error { return p.K.Unlink(name) }) }
func (p *Process) Stat(name string) (Stat, error) {
	return do2(p, func() (Stat, error) { return p.K.Stat(name) })
}
func (p *Process) Running(pid int) bool                  { return do(p, func() bool { return p.K.Running(pid) }) }
func (p *Process) ReadFile(name string) ([]byte, error)  { return readFile(p, name) }
func (p *Process) WriteFile(name string, d []byte) error { return writeFile(p, name, d) }
func (p *Process) Getpid() int                           { return p.PID }

// Exit is the process's end, as the harness sees it (a crash): never
// entered, it runs where the crash is handled.
func (p *Process) Exit() { p.K.Exit(p.PID) }

// readFile is os.ReadFile: open, read, close. Under fcntl's rules the
// close drops the process's locks on the file (Kernel.Close).
func readFile(p *Process, name string) ([]byte, error) {
	fd, err := p.Open(name)
	if err != nil {
		return nil, err
	}
	d, err := p.Read(fd)
	if cerr := p.Close(fd); err == nil {
		err = cerr
	}
	return d, err
}

func writeFile(p *Process, name string, d []byte) error {
	fd, err := p.OpenCreate(name)
	if err != nil {
		return err
	}
	err = p.Write(fd, d)
	if cerr := p.Close(fd); err == nil {
		err = cerr
	}
	return err
}

// Remote is an NFSv4 mount on a client host: each operation is a call to
// the server host over the simulated network, retransmitted with the same
// XID after Timeo without a reply, for as long as the process lives (a
// hard mount, nfs(5): "timeo", "hard"). It keeps the client's lease: a
// background process renews it every two thirds of the lease while the
// kernel holds locks (RFC 7530 §9.6), re-establishes the client ID after
// a restart and reclaims its locks (§9.6.2).
type Remote struct {
	W      *sim.World
	Host   *sim.Host
	Server string
	Srv    *Server
	// SrvHost is the server's host, whose clock times leases.
	SrvHost *sim.Host
	Timeo   time.Duration
	Kernel  *Kernel

	epoch    int
	xid      uint64
	renewing bool
}

var errGone = errors.New("EIO: the process ended during the call")

// call sends r until a reply comes, and deals with the client ID.
func (m *Remote) call(r Request) Reply {
	for attempt := 0; ; attempt++ {
		if m.epoch == 0 && r.Op != OpSetClientID {
			if err := m.setClientID(); err != nil {
				return Reply{Err: err}
			}
		}
		rep := m.send(r)
		switch {
		case errors.Is(rep.Err, ErrStaleClientID) && attempt < 3:
			m.recoverState()
			continue
		case errors.Is(rep.Err, ErrExpired) && attempt < 3:
			m.dropAll("lease expired (NFS4ERR_EXPIRED)")
			m.epoch = 0
			if r.Op == OpLocku || r.Op == OpRenew {
				return Reply{Err: ErrIO}
			}
			continue
		}
		return rep
	}
}

// send is one request with its retransmissions.
func (m *Remote) send(r Request) Reply {
	p := m.W.Current()
	m.xid++
	r.XID, r.Client, r.Epoch = m.xid, m.Host.Name, m.epoch
	srv := m.Srv
	for {
		v, err := p.Call(m.Server, r.Op, r.Summary(), m.Timeo, func() (any, string) {
			rep := srv.Handle(ServerClock(m.W, m.SrvHost), r)
			return rep, rep.Summary()
		})
		if err == nil {
			return v.(Reply)
		}
		if p.Killed() || p.Done() {
			return Reply{Err: errGone}
		}
	}
}

func (m *Remote) setClientID() error {
	rep := m.send(Request{Op: OpSetClientID})
	if rep.Err != nil {
		return rep.Err
	}
	m.epoch = rep.Epoch
	return nil
}

// recoverState follows a restart: a new client ID, then a reclaim of each
// lock the kernel holds. A reclaim refused (after the grace period,
// NFS4ERR_NO_GRACE, or another client took the lock) loses that lock.
func (m *Remote) recoverState() {
	m.epoch = 0
	if err := m.setClientID(); err != nil {
		return
	}
	for _, l := range m.Kernel.Held() {
		if rep := m.send(Request{Op: OpLock, Lock: l, Ino: l.Ino, Reclaim: true}); rep.Err != nil {
			m.lose(l, "reclaim refused: "+rep.Err.Error())
		}
	}
}

func (m *Remote) dropAll(why string) {
	for _, l := range m.Kernel.Held() {
		m.lose(l, why)
	}
}

func (m *Remote) lose(l Lock, why string) {
	m.Kernel.Lost(l)
	m.W.Record(m.Host.Name, event.Event{Kind: event.FSLockLost, Client: m.Host.Name, Key: Name(l.Ino), Reason: why})
}

// renew runs in the background while the kernel holds locks.
func (m *Remote) renew(p *sim.Process) {
	for {
		p.Sleep(m.Srv.Lease * 2 / 3)
		if len(m.Kernel.Held()) == 0 {
			continue
		}
		m.call(Request{Op: OpRenew})
	}
}

func (m *Remote) Create(name string, excl bool) (uint64, error) {
	rep := m.call(Request{Op: OpCreate, Name: name, Excl: excl})
	return rep.Ino, rep.Err
}
func (m *Remote) Lookup(name string) (uint64, error) {
	rep := m.call(Request{Op: OpLookup, Name: name})
	return rep.Ino, rep.Err
}
func (m *Remote) Link(oldname, newname string) error {
	return m.call(Request{Op: OpLink, Name: oldname, Name2: newname}).Err
}
func (m *Remote) Unlink(name string) error { return m.call(Request{Op: OpRemove, Name: name}).Err }
func (m *Remote) Stat(name string) (Stat, error) {
	rep := m.call(Request{Op: OpGetattr, Name: name})
	return rep.Stat, rep.Err
}
func (m *Remote) Read(ino uint64) ([]byte, error) {
	rep := m.call(Request{Op: OpRead, Ino: ino})
	return rep.Data, rep.Err
}
func (m *Remote) Write(ino uint64, data []byte) error {
	return m.call(Request{Op: OpWrite, Ino: ino, Data: data}).Err
}
func (m *Remote) SetLock(l Lock) error {
	err := m.call(Request{Op: OpLock, Lock: l, Ino: l.Ino}).Err
	if err == nil && !m.renewing {
		m.renewing = true
		m.W.Current().GoBackground("nfs-renew", m.renew)
	}
	return err
}
func (m *Remote) Unlock(l Lock) error {
	return m.call(Request{Op: OpLocku, Lock: l, Ino: l.Ino}).Err
}

// ServerClock is the server host's clock reading at the world's instant,
// as a duration: leases and the grace period run on it.
func ServerClock(w *sim.World, h *sim.Host) time.Duration {
	return h.Clock.Time(w.Now()).Sub(sim.Epoch)
}
