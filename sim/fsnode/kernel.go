package fsnode

import (
	"fmt"
	"slices"
)

// Store is where a kernel's file operations go: the local file system
// (Local), or an NFS server across the network (Remote, client.go).
type Store interface {
	Create(name string, excl bool) (uint64, error)
	Lookup(name string) (uint64, error)
	Link(oldname, newname string) error
	Unlink(name string) error
	Stat(name string) (Stat, error)
	Read(ino uint64) ([]byte, error)
	Write(ino uint64, data []byte) error
	SetLock(l Lock) error
	Unlock(l Lock) error
}

// Local is a file system on the kernel's own disk.
type Local struct{ FS *FS }

func (s Local) Create(name string, excl bool) (uint64, error) { return s.FS.Create(name, excl) }
func (s Local) Lookup(name string) (uint64, error)            { return s.FS.Lookup(name) }
func (s Local) Link(oldname, newname string) error            { return s.FS.Link(oldname, newname) }
func (s Local) Unlink(name string) error                      { return s.FS.Unlink(name) }
func (s Local) Stat(name string) (Stat, error)                { return s.FS.Stat(name) }
func (s Local) Read(ino uint64) ([]byte, error)               { return s.FS.Read(ino) }
func (s Local) Write(ino uint64, data []byte) error           { return s.FS.Write(ino, data) }
func (s Local) SetLock(l Lock) error                          { return s.FS.SetLock(l) }
func (s Local) Unlock(l Lock) error {
	s.FS.Unlock(l.Ino, l.Kind, l.Owner)
	return nil
}

// ofd is an open file description: what open(2) creates and dup(2) and
// fork(2) share (open(2), "open file descriptions").
type ofd struct {
	id   uint64
	ino  uint64
	refs int // descriptors that refer to it
}

// Kernel is one host's kernel: processes, their descriptor tables, the
// open file descriptions, and its process table (which PIDs run).
type Kernel struct {
	// Host names the kernel in lock owners ("c1/101"): an NFS server
	// tells lock owners of different clients apart by it.
	Host string
	// NFS says the store is an NFS mount: flock(2), NOTES: "Since Linux
	// 2.6.12, NFS clients support flock() locks by emulating them as
	// fcntl(2) byte-range locks on the entire file", so a flock lock is
	// a whole-file POSIX lock of the process there, and the fcntl rules
	// apply to it.
	NFS   bool
	Store Store
	// OnDrop, when set, hears that a close or an exit dropped locks.
	OnDrop func(pid int, ino uint64, kind LockKind, why string)
	// Syscall, when set, runs at the start of the calls that do not reach
	// the Store (kill(2), close(2)), so that they take time as the others
	// do (scenarios/filesystem.go's scheduled store).
	Syscall func()

	fds     map[int]map[int]*ofd // pid → descriptor → description
	running map[int]bool
	nextOFD uint64
	held    []Lock // locks this kernel's processes hold, in grant order
	lost    []Lock // locks the server dropped that no one has unlocked yet
	mutant  string // see FS.mutant
}

// NewKernel is a kernel on host over store.
func NewKernel(host string, store Store, nfs bool) *Kernel {
	return &Kernel{Host: host, Store: store, NFS: nfs, fds: map[int]map[int]*ofd{}, running: map[int]bool{}}
}

// Start makes pid a running process.
func (k *Kernel) Start(pid int) {
	k.running[pid] = true
	if k.fds[pid] == nil {
		k.fds[pid] = map[int]*ofd{}
	}
}

// Running is kill(pid, 0) on this kernel: whether a process with that PID
// runs here (kill(2)). A PID says nothing about another host's processes.
func (k *Kernel) Running(pid int) bool {
	k.syscall()
	return k.running[pid]
}

func (k *Kernel) syscall() {
	if k.Syscall != nil {
		k.Syscall()
	}
}

// Owner is the lock owner of a process's POSIX locks.
func (k *Kernel) Owner(pid int) string { return fmt.Sprintf("%s/%d", k.Host, pid) }

func (k *Kernel) desc(pid, fd int) (*ofd, error) {
	if d := k.fds[pid][fd]; d != nil {
		return d, nil
	}
	return nil, ErrBadFD
}

// Open opens name for pid: O_CREAT when create, with O_EXCL when excl.
func (k *Kernel) Open(pid int, name string, create, excl bool) (int, error) {
	var ino uint64
	var err error
	if create {
		ino, err = k.Store.Create(name, excl)
	} else {
		ino, err = k.Store.Lookup(name)
	}
	if err != nil {
		return -1, err
	}
	k.nextOFD++
	return k.install(pid, &ofd{id: k.nextOFD, ino: ino}), nil
}

// install gives d the lowest free descriptor of pid (open(2): "the lowest-
// numbered file descriptor not currently open for the process").
func (k *Kernel) install(pid int, d *ofd) int {
	k.Start(pid)
	fd := 3
	for k.fds[pid][fd] != nil {
		fd++
	}
	d.refs++
	k.fds[pid][fd] = d
	return fd
}

// Dup is dup(2): a new descriptor to the same open file description.
func (k *Kernel) Dup(pid, fd int) (int, error) {
	d, err := k.desc(pid, fd)
	if err != nil {
		return -1, err
	}
	return k.install(pid, d), nil
}

// Read returns the file's contents.
func (k *Kernel) Read(pid, fd int) ([]byte, error) {
	d, err := k.desc(pid, fd)
	if err != nil {
		return nil, err
	}
	return k.Store.Read(d.ino)
}

// Write replaces the file's contents.
func (k *Kernel) Write(pid, fd int, data []byte) error {
	d, err := k.desc(pid, fd)
	if err != nil {
		return err
	}
	return k.Store.Write(d.ino, data)
}

// lockOf is the lock a flock or fcntl call on descriptor d of pid takes.
// flock(2): the lock "is associated with an open file description";
// fcntl(2): record locks are "associated with a process".
func (k *Kernel) lockOf(pid int, d *ofd, kind LockKind, excl bool) Lock {
	if kind == Flock && !k.NFS {
		owner := fmt.Sprintf("%s/ofd%d", k.Host, d.id)
		if k.mutant == "flock-per-process" {
			owner = k.Owner(pid)
		}
		return Lock{Ino: d.ino, Kind: Flock, Owner: owner, Excl: excl}
	}
	return Lock{Ino: d.ino, Kind: Posix, Owner: k.Owner(pid), Excl: excl}
}

// Flock is flock(fd, LOCK_EX|LOCK_NB) (excl) or LOCK_SH|LOCK_NB: it
// returns ErrWouldBlock when another description holds a conflicting lock.
func (k *Kernel) Flock(pid, fd int, excl bool) error {
	d, err := k.desc(pid, fd)
	if err != nil {
		return err
	}
	return k.setLock(k.lockOf(pid, d, Flock, excl))
}

// Fcntl is fcntl(fd, F_SETLK) of a write (excl) or read lock on the whole
// file: ErrWouldBlock (EAGAIN) when another process holds a conflicting one.
func (k *Kernel) Fcntl(pid, fd int, excl bool) error {
	d, err := k.desc(pid, fd)
	if err != nil {
		return err
	}
	return k.setLock(k.lockOf(pid, d, Posix, excl))
}

func (k *Kernel) setLock(l Lock) error {
	if err := k.Store.SetLock(l); err != nil {
		return err
	}
	k.forget(l)
	k.held = append(k.held, l)
	return nil
}

func (k *Kernel) forget(l Lock) bool {
	n := len(k.held)
	k.held = slices.DeleteFunc(k.held, func(h Lock) bool { return h.Ino == l.Ino && h.Kind == l.Kind && h.Owner == l.Owner })
	return len(k.held) < n
}

// Unflock is flock(fd, LOCK_UN).
func (k *Kernel) Unflock(pid, fd int) error {
	d, err := k.desc(pid, fd)
	if err != nil {
		return err
	}
	return k.unlock(k.lockOf(pid, d, Flock, false))
}

// Unfcntl is fcntl(fd, F_SETLK) of F_UNLCK on the whole file.
func (k *Kernel) Unfcntl(pid, fd int) error {
	d, err := k.desc(pid, fd)
	if err != nil {
		return err
	}
	return k.unlock(k.lockOf(pid, d, Posix, false))
}

func (k *Kernel) unlock(l Lock) error {
	n := len(k.lost)
	k.lost = slices.DeleteFunc(k.lost, func(h Lock) bool { return h.Ino == l.Ino && h.Kind == l.Kind && h.Owner == l.Owner })
	if len(k.lost) < n {
		return ErrIO // the first call on a lost lock reports it (RFC 7530 §9.6.3)
	}
	if !k.forget(l) {
		return nil // nothing held: unlocking is a no-op (fcntl(2), flock(2))
	}
	return k.Store.Unlock(l)
}

// Held lists the locks this kernel believes its processes hold.
func (k *Kernel) Held() []Lock { return slices.Clone(k.held) }

// Lost forgets a lock the server dropped (NFS: lease expiry, a reclaim
// refused after a restart).
func (k *Kernel) Lost(l Lock) {
	if k.forget(l) {
		k.lost = append(k.lost, l)
	}
}

// Close is close(2) of pid's descriptor fd. fcntl(2): "If a process closes
// any file descriptor referring to a file, then all of the process's locks
// on that file are released, regardless of the file descriptor(s) on which
// the locks were obtained." flock(2): a lock "is released either by an
// explicit LOCK_UN operation on any of these duplicate file descriptors,
// or when all such file descriptors have been closed."
func (k *Kernel) Close(pid, fd int) error {
	k.syscall()
	return k.close(pid, fd)
}

func (k *Kernel) close(pid, fd int) error {
	d, err := k.desc(pid, fd)
	if err != nil {
		return err
	}
	delete(k.fds[pid], fd)
	d.refs--
	var firstErr error
	if l := k.lockOf(pid, d, Posix, false); k.holds(l) && (k.mutant != "fcntl-close-keeps" || !k.hasOpen(pid, d.ino)) {
		firstErr = k.unlock(l)
		k.dropped(pid, l, "close of fd "+fmt.Sprint(fd))
	}
	if l := k.lockOf(pid, d, Flock, false); d.refs == 0 && l.Kind == Flock && k.holds(l) {
		if err := k.unlock(l); firstErr == nil {
			firstErr = err
		}
		k.dropped(pid, l, "last descriptor closed")
	}
	return firstErr
}

// hasOpen reports whether pid still has a descriptor of ino.
func (k *Kernel) hasOpen(pid int, ino uint64) bool {
	for _, d := range k.fds[pid] {
		if d.ino == ino {
			return true
		}
	}
	return false
}

func (k *Kernel) holds(l Lock) bool {
	return slices.ContainsFunc(k.held, func(h Lock) bool { return h.Ino == l.Ino && h.Kind == l.Kind && h.Owner == l.Owner })
}

func (k *Kernel) dropped(pid int, l Lock, why string) {
	if k.OnDrop != nil {
		k.OnDrop(pid, l.Ino, l.Kind, why)
	}
}

// Exit is the process's end (_exit(2)): its descriptors are closed, so
// its POSIX locks go, and flock locks go with the last descriptor of
// their description; its PID no longer runs.
func (k *Kernel) Exit(pid int) {
	fds := make([]int, 0, len(k.fds[pid]))
	for fd := range k.fds[pid] {
		fds = append(fds, fd)
	}
	slices.Sort(fds)
	for _, fd := range fds {
		if k.mutant != "exit-keeps" {
			_ = k.close(pid, fd)
		}
	}
	delete(k.running, pid)
}

// Link, Unlink and Stat are link(2), unlink(2) and stat(2) by name.
func (k *Kernel) Link(oldname, newname string) error { return k.Store.Link(oldname, newname) }
func (k *Kernel) Unlink(name string) error           { return k.Store.Unlink(name) }
func (k *Kernel) Stat(name string) (Stat, error)     { return k.Store.Stat(name) }
