// Package fslock holds the file-system locks, backend "filesystem": lock
// files and kernel locks taken through the file API of sim/fsnode, on
// one host's kernel (fs: local) or over an NFSv4 mount (fs: nfs). Each
// algorithm follows the code path of a real library, step by step:
//
//	lockfile-pid   nightlyone/lockfile, lockfile.go: TryLock writes a
//	               temporary file holding the PID (makePidFile), link(2)s
//	               it to the lock's name, and owns the lock when both
//	               names are the same file (os.SameFile on Lstat). A lock
//	               file whose PID does not run (GetOwner, isRunning) is
//	               stale: TryLock removes it and tries again. Unlock
//	               removes the file if its PID is the caller's.
//	lockfile-excl  the exclusive-create lock file: open(O_CREAT|O_EXCL),
//	               write the PID, remove on release.
//	flock          gofrs/flock, flock_unix.go: TryLock opens the file
//	               (setFh, O_CREATE|O_RDONLY) and calls flock(LOCK_EX|
//	               LOCK_NB), closing the file again when it did not get
//	               the lock (ensureFhState); Unlock is LOCK_UN and a close.
//	fcntl          the same path with a whole-file F_SETLK write lock, as
//	               gofrs/flock's flock_unix_fcntl.go takes it where flock
//	               is missing.
//
// Their weaknesses: a stale-PID takeover races (two waiters both remove
// and both link, or one removes the new holder's file), a reused PID keeps
// a dead holder's lock, a PID means nothing on another host; a
// retransmitted exclusive create answers EEXIST to its own creator; a
// process that opens and closes the lock file again drops its fcntl lock
// (close_other_fd); over NFS a lock lives only as long as the client's
// lease, and a partitioned client writes on after the server gave its
// lock away. token_source: file takes a token from a counter file under the
// lock, which the protected resource checks.
package fslock

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/sim/fsnode"
)

// Backend is the name of the backend these algorithms need.
const Backend = "filesystem"

var commonParams = []algorithms.Param{
	{Name: algorithms.ParamTokenSource, Expect: "file or none", Check: algorithms.OneOf("file", "none")},
}

var kernelParams = append([]algorithms.Param{
	{Name: "close_other_fd", Expect: "a duration after the lock is taken, such as 2s", Check: func(v string) error {
		if d, err := faults.ParseDuration(v); err != nil || d.D() <= 0 {
			return errors.New("expected a positive duration, such as 2s")
		}
		return nil
	}},
}, commonParams...)

func init() {
	for _, a := range []struct {
		name, summary string
		params        []algorithms.Param
		build         func(*lock) step
	}{
		{"lockfile-pid", "PID lock file (nightlyone/lockfile): temp file + link(2), stale when its PID does not run", commonParams, pidFile},
		{"lockfile-excl", "lock file by exclusive create (O_CREAT|O_EXCL), removed on release", commonParams, exclFile},
		{"flock", "flock(2) through gofrs/flock's TryLock/Unlock (on NFS: emulated by a whole-file fcntl lock)", kernelParams, kernelLock(false)},
		{"fcntl", "fcntl(2) F_SETLK write lock on the whole file, per process", kernelParams, kernelLock(true)},
	} {
		a := a
		// token_source: file (commonParams) is each lock's own token source:
		// a counter file under the lock (nextFence).
		algorithms.Register(algorithms.Info{
			Name: a.name, Summary: a.summary, Backend: Backend, Params: a.params, Fencing: algorithms.FencingBuiltIn,
			New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
				proc, ok := c.Backend.(*fsnode.Process)
				if !ok || proc == nil {
					return nil, fmt.Errorf("%s needs the %q backend", a.name, Backend)
				}
				l := &lock{proc: proc, name: p.Key, wait: p.Wait, fence: p.Extra[algorithms.ParamTokenSource] == "file"}
				if v, ok := p.Extra["close_other_fd"]; ok {
					d, _ := faults.ParseDuration(v)
					l.closeOther = d.D()
				}
				l.step = a.build(l)
				return l, nil
			},
		})
	}
}

// step is one algorithm's try and release.
type step struct {
	try     func(env algorithms.Env) error
	release func(env algorithms.Env) error
}

// lock is one client's file-system lock.
type lock struct {
	proc       *fsnode.Process
	name       string
	wait       algorithms.WaitPolicy
	fence      bool
	closeOther time.Duration
	step       step
	fd         int // the kernel lock's descriptor while held
}

// Acquire tries under the wait policy (every library here offers a
// non-blocking try; the caller polls).
func (l *lock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	return l.wait.Retry(env, func() (*algorithms.Lease, error) {
		if err := l.step.try(env); err != nil {
			return nil, err
		}
		now := env.Now()
		lease := &algorithms.Lease{Resource: l.name, LockValue: strconv.Itoa(l.proc.PID), Start: now, Validity: now.Add(algorithms.NoDeadline)}
		if l.fence {
			f, err := l.nextFence()
			if err != nil {
				return nil, err
			}
			lease.FencingToken = f
		}
		if l.closeOther > 0 {
			// The pitfall of fcntl(2): another part of the same process
			// (a library reading the file) opens and closes it.
			name := l.name
			env.Go(func(bg algorithms.Env) {
				bg.Sleep(l.closeOther)
				_, _ = l.proc.ReadFile(name)
			})
		}
		return lease, nil
	})
}

// Release gives the lock up.
func (l *lock) Release(env algorithms.Env, _ *algorithms.Lease) error { return l.step.release(env) }

// nextFence reads the counter file beside the lock and writes it plus
// one, while holding the lock: each holder's token is above the last.
func (l *lock) nextFence() (int64, error) {
	name := l.name + ".fence"
	d, err := l.proc.ReadFile(name)
	if err != nil && !errors.Is(err, fsnode.ErrNotExist) {
		return 0, err
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(d)), 10, 64)
	n++
	return n, l.proc.WriteFile(name, []byte(strconv.FormatInt(n, 10)))
}

// notAcquired turns a busy answer into the wait policy's signal.
func notAcquired(err error) error {
	if errors.Is(err, fsnode.ErrExist) || errors.Is(err, fsnode.ErrWouldBlock) || errors.Is(err, fsnode.ErrGrace) {
		return algorithms.ErrNotAcquired
	}
	return err
}
