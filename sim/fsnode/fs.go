// Package fsnode models a file system that processes lock through: the
// files of one directory (names, inodes, link counts, contents) and the
// lock table of one kernel or one NFSv4 server, with the rules the Linux
// man pages and the NFSv4 RFCs give (docs/filesystem.md lists them and
// says which are checked against the real file system by
// differential_test.go).
//
// FS is the state and its rules, with no network and no clock: Kernel
// (kernel.go) puts descriptors and processes on top of it, the way one
// host's kernel does, and Server (server.go) puts NFSv4 client leases, the
// grace period after a restart and the duplicate-request cache around it.
package fsnode

import (
	"errors"
	"fmt"
	"slices"
)

// Errors, named after the errno or NFS status a real call returns.
var (
	ErrExist      = errors.New("EEXIST: file exists")
	ErrNotExist   = errors.New("ENOENT: no such file or directory")
	ErrWouldBlock = errors.New("EWOULDBLOCK: the lock is held")
	ErrBadFD      = errors.New("EBADF: bad file descriptor")
	ErrIO         = errors.New("EIO: the lock was lost")
	// ErrGrace is NFS4ERR_GRACE (RFC 7530 §9.6.2): the server restarted
	// and takes only reclaims until its grace period ends.
	ErrGrace = errors.New("NFS4ERR_GRACE: the server is in its grace period")
	// ErrNoGrace is NFS4ERR_NO_GRACE: a reclaim after the grace period.
	ErrNoGrace = errors.New("NFS4ERR_NO_GRACE: reclaim after the grace period")
	// ErrStaleClientID is NFS4ERR_STALE_CLIENTID: the server restarted
	// since the client established its client ID.
	ErrStaleClientID = errors.New("NFS4ERR_STALE_CLIENTID: the server restarted")
	// ErrExpired is NFS4ERR_EXPIRED: the client's lease ran out and the
	// server dropped its locks.
	ErrExpired = errors.New("NFS4ERR_EXPIRED: the client's lease expired")
)

// Inode is one file.
type Inode struct {
	Ino   uint64
	Nlink int
	Data  []byte
}

// Stat is what stat(2) returns that lock code reads.
type Stat struct {
	Ino   uint64
	Nlink int
	Size  int
}

// LockKind separates the two lock tables of a Linux kernel.
type LockKind string

const (
	// Flock is a flock(2) lock: it belongs to an open file description.
	Flock LockKind = "flock"
	// Posix is an fcntl(2) record lock: it belongs to a process (a lock
	// owner on an NFSv4 server, RFC 7530 §9.1.1).
	Posix LockKind = "posix"
)

// Lock is one granted lock. End 0 means "to the end of the file and
// beyond", fcntl's l_len 0 (fcntl(2)).
type Lock struct {
	Ino   uint64
	Kind  LockKind
	Owner string
	Excl  bool
	Start int64
	End   int64
}

func (l Lock) overlaps(start, end int64) bool {
	endA, endB := l.End, end
	if endA == 0 {
		endA = 1 << 62
	}
	if endB == 0 {
		endB = 1 << 62
	}
	return l.Start < endB && start < endA
}

// FS is one directory of files and the locks granted on them.
type FS struct {
	names   map[string]uint64
	inodes  map[uint64]*Inode
	locks   []Lock // in the order granted: iteration is deterministic
	nextIno uint64
	// mutant, set only by differential_test.go, breaks one rule, so the
	// test can show the real file system tells the difference.
	mutant string
}

// NewFS is an empty directory.
func NewFS() *FS {
	return &FS{names: map[string]uint64{}, inodes: map[uint64]*Inode{}, nextIno: 1000}
}

// Create makes name, or opens it. open(2): "O_EXCL: Ensure that this call
// creates the file: if this flag is specified in conjunction with O_CREAT,
// and pathname already exists, then open() fails with the error EEXIST."
// RFC 8881 §18.16.3 (OPEN): a GUARDED4 create of an existing name is
// NFS4ERR_EXIST; a retransmission is recognised, if at all, by the
// server's duplicate-request cache, not by the file system.
func (fs *FS) Create(name string, excl bool) (uint64, error) {
	if ino, ok := fs.names[name]; ok {
		if excl && fs.mutant != "excl-ignored" {
			return 0, ErrExist
		}
		return ino, nil
	}
	fs.nextIno++
	ino := fs.nextIno
	fs.inodes[ino] = &Inode{Ino: ino, Nlink: 1}
	fs.names[name] = ino
	return ino, nil
}

// Lookup finds name's inode.
func (fs *FS) Lookup(name string) (uint64, error) {
	if ino, ok := fs.names[name]; ok {
		return ino, nil
	}
	return 0, ErrNotExist
}

// Link makes newname a second name of oldname's inode. link(2): "If
// newpath exists, it will not be overwritten" (EEXIST), and the link
// count (st_nlink) grows by one.
func (fs *FS) Link(oldname, newname string) error {
	ino, ok := fs.names[oldname]
	if !ok {
		return ErrNotExist
	}
	if _, taken := fs.names[newname]; taken {
		return ErrExist
	}
	fs.names[newname] = ino
	if fs.mutant != "link-count-fixed" {
		fs.inodes[ino].Nlink++
	}
	return nil
}

// Unlink removes the name; the inode lives on while open (unlink(2)), and
// its locks with it.
func (fs *FS) Unlink(name string) error {
	ino, ok := fs.names[name]
	if !ok {
		return ErrNotExist
	}
	delete(fs.names, name)
	fs.inodes[ino].Nlink--
	return nil
}

// Stat returns name's inode number, link count and size (stat(2)).
func (fs *FS) Stat(name string) (Stat, error) {
	ino, ok := fs.names[name]
	if !ok {
		return Stat{}, ErrNotExist
	}
	in := fs.inodes[ino]
	return Stat{Ino: ino, Nlink: in.Nlink, Size: len(in.Data)}, nil
}

// Read returns the inode's contents.
func (fs *FS) Read(ino uint64) ([]byte, error) {
	in, ok := fs.inodes[ino]
	if !ok {
		return nil, ErrBadFD
	}
	return slices.Clone(in.Data), nil
}

// Write replaces the inode's contents (a write at offset 0 after O_TRUNC).
func (fs *FS) Write(ino uint64, data []byte) error {
	in, ok := fs.inodes[ino]
	if !ok {
		return ErrBadFD
	}
	in.Data = slices.Clone(data)
	return nil
}

// SetLock grants owner a lock of kind on [start, end) of ino, or reports
// ErrWouldBlock. Only locks of the same kind conflict: flock(2), NOTES:
// "flock() and fcntl(2) locks have no effect on one another" on a local
// file system. A shared lock conflicts only with another owner's
// exclusive one (fcntl(2): "any number of processes may hold a read lock
// ... on a file region, but only one process may hold a write lock").
// An owner's new lock replaces its own overlapping ones (fcntl(2): an
// existing lock is converted; flock(2): "a subsequent flock() call on an
// already locked file will convert an existing lock to the new lock mode").
func (fs *FS) SetLock(l Lock) error {
	for _, h := range fs.locks {
		if h.Ino == l.Ino && (h.Kind == l.Kind || fs.mutant == "flock-fcntl-interact") && h.Owner != l.Owner && h.overlaps(l.Start, l.End) && (h.Excl || l.Excl) {
			return ErrWouldBlock
		}
	}
	fs.Unlock(l.Ino, l.Kind, l.Owner)
	fs.locks = append(fs.locks, l)
	return nil
}

// Holds reports whether owner holds a lock of kind on ino.
func (fs *FS) Holds(ino uint64, kind LockKind, owner string) bool {
	return slices.ContainsFunc(fs.locks, func(h Lock) bool { return h.Ino == ino && h.Kind == kind && h.Owner == owner })
}

// Unlock drops owner's locks of kind on ino and says how many it dropped.
// (A partial unlock that splits a range is not modelled: the lock
// algorithms lock and unlock whole files.)
func (fs *FS) Unlock(ino uint64, kind LockKind, owner string) int {
	n := len(fs.locks)
	fs.locks = slices.DeleteFunc(fs.locks, func(h Lock) bool { return h.Ino == ino && h.Kind == kind && h.Owner == owner })
	return n - len(fs.locks)
}

// DropOwners drops every lock whose owner match says so, on any file,
// and says how many it dropped.
func (fs *FS) DropOwners(match func(owner string) bool) int {
	n := len(fs.locks)
	fs.locks = slices.DeleteFunc(fs.locks, func(h Lock) bool { return match(h.Owner) })
	return n - len(fs.locks)
}

// Locks lists the granted locks, in grant order.
func (fs *FS) Locks() []Lock { return slices.Clone(fs.locks) }

// Name renders an inode for traces.
func Name(ino uint64) string { return fmt.Sprintf("ino %d", ino) }
