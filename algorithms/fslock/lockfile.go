package fslock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/fsnode"
)

// ErrRogueDeletion is nightlyone/lockfile's answer to an Unlock of a lock
// file that is not the caller's any more (someone took it over).
var ErrRogueDeletion = errors.New("lockfile owned by me has been removed unexpectedly")

// errDeadOwner is GetOwner's ErrDeadOwner and ErrInvalidPid: the file
// holds no running PID, so TryLock treats it as stale.
var errDeadOwner = errors.New("lockfile contains the pid of a process not running here")

// pidFile follows nightlyone/lockfile's TryLock and Unlock (lockfile.go).
func pidFile(l *lock) step {
	return step{
		try: func(env algorithms.Env) error {
			// TryLock recurses after removing a stale file; a bound keeps a
			// file that keeps coming back from looping forever.
			for range 8 {
				again, err := l.tryPidFile(env)
				if !again {
					return err
				}
			}
			return algorithms.ErrNotAcquired
		},
		release: func(algorithms.Env) error {
			pid, err := l.owner()
			if err != nil || pid != l.proc.PID {
				return ErrRogueDeletion
			}
			return l.proc.Unlink(l.name)
		},
	}
}

// tryPidFile is one pass of TryLock; again asks for the recursion.
func (l *lock) tryPidFile(env algorithms.Env) (again bool, err error) {
	p := l.proc
	// makePidFile: ioutil.TempFile beside the lock, the PID written in it.
	tmp := fmt.Sprintf("%s.%d", l.name, env.Rand().Uint32())
	fd, err := p.CreateExcl(tmp)
	if err != nil {
		return false, err
	}
	defer func() { // cleanup: close and remove the temporary name
		_ = p.Close(fd)
		_ = p.Unlink(tmp)
	}()
	if err := p.Write(fd, []byte(fmt.Sprintf("%d\n", p.PID))); err != nil {
		return false, err
	}
	// os.Link; EEXIST is "part of the algorithm": the owner check decides.
	if err := p.Link(tmp, l.name); err != nil && !errors.Is(err, fsnode.ErrExist) {
		return false, err
	}
	st, err := p.Stat(tmp)
	if err != nil {
		return false, err
	}
	lk, err := p.Stat(l.name)
	if errors.Is(err, fsnode.ErrNotExist) {
		return false, algorithms.ErrNotAcquired // ErrNotExist: retry later
	} else if err != nil {
		return false, err
	}
	if st.Ino == lk.Ino { // os.SameFile: the link is ours
		return false, nil
	}
	pid, err := l.owner()
	switch {
	case errors.Is(err, fsnode.ErrNotExist):
		return false, algorithms.ErrNotAcquired
	case err == nil && pid != p.PID:
		return false, algorithms.ErrNotAcquired // ErrBusy
	case err != nil && !errors.Is(err, errDeadOwner):
		return false, err
	}
	// clean the stale (or our own) lock file, then recurse
	if err := p.Unlink(l.name); err != nil && !errors.Is(err, fsnode.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// owner is GetOwner: the PID in the lock file, if that process runs here
// (isRunning: kill(pid, 0) on this host's kernel).
func (l *lock) owner() (int, error) {
	content, err := l.proc.ReadFile(l.name)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(content)))
	if err != nil || pid <= 0 || !l.proc.Running(pid) {
		return 0, errDeadOwner
	}
	return pid, nil
}

// exclFile is the exclusive-create lock file: O_CREAT|O_EXCL, the PID
// written in it, unlink on release.
func exclFile(l *lock) step {
	return step{
		try: func(algorithms.Env) error {
			fd, err := l.proc.CreateExcl(l.name)
			if err != nil {
				return notAcquired(err)
			}
			werr := l.proc.Write(fd, []byte(fmt.Sprintf("%d\n", l.proc.PID)))
			if err := l.proc.Close(fd); werr == nil {
				werr = err
			}
			return werr
		},
		release: func(algorithms.Env) error { return l.proc.Unlink(l.name) },
	}
}

// kernelLock is gofrs/flock's TryLock and Unlock (flock_unix.go), with
// flock(2) or with a whole-file fcntl(2) lock.
func kernelLock(fcntl bool) func(l *lock) step {
	return func(l *lock) step {
		p := l.proc
		return step{
			try: func(algorithms.Env) error {
				fd, err := p.OpenCreate(l.name) // setFh
				if err != nil {
					return notAcquired(err)
				}
				if fcntl {
					err = p.Fcntl(fd, true)
				} else {
					err = p.Flock(fd, true)
				}
				if err != nil {
					_ = p.Close(fd) // ensureFhState: not locked, close
					return notAcquired(err)
				}
				l.fd = fd
				return nil
			},
			release: func(algorithms.Env) error {
				var err error
				if fcntl {
					err = p.Unfcntl(l.fd)
				} else {
					err = p.Unflock(l.fd)
				}
				if cerr := p.Close(l.fd); err == nil { // reset: close the handle
					err = cerr
				}
				return err
			},
		}
	}
}
