package locktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/sim/fsnode"
)

// flockLock is a user's lock in the style of gofrs/flock: open the file,
// flock(LOCK_EX|LOCK_NB), close it again when busy; unlock and close.
type flockLock struct {
	fs *fsnode.Process
	fd int
}

func (l *flockLock) Lock(context.Context) error {
	fd, err := l.fs.OpenCreate("app.lock")
	if err != nil {
		return err
	}
	if err := l.fs.Flock(fd, true); err != nil {
		_ = l.fs.Close(fd)
		return err
	}
	l.fd = fd
	return nil
}

func (l *flockLock) Unlock(context.Context) error {
	err := l.fs.Unflock(l.fd)
	if cerr := l.fs.Close(l.fd); err == nil {
		err = cerr
	}
	return err
}

// exclLock is a lock file by exclusive create, removed on release.
type exclLock struct{ fs *fsnode.Process }

func (l *exclLock) Lock(context.Context) error {
	fd, err := l.fs.CreateExcl("app.lock")
	if err != nil {
		return err
	}
	_ = l.fs.Write(fd, []byte(fmt.Sprintf("%d\n", l.fs.Getpid())))
	return l.fs.Close(fd)
}

func (l *exclLock) Unlock(context.Context) error { return l.fs.Unlink("app.lock") }

// A user's flock lock on one host is safe under crashes and pauses: the
// kernel drops a dead process's lock, and a paused holder still holds it.
func TestFileSystemFlockIsSafeLocally(t *testing.T) {
	RunFileSystem(t, FileSystem{Params: map[string]string{"fs": "local"}},
		func(fs *fsnode.Process) Lock { return &flockLock{fs: fs} },
		Options{TTL: 2 * time.Second, Classes: []Class{Crash, Pause}, Runs: 20})
}

// A user's exclusive-create lock file over NFS: a client that dies holding
// it leaves the file, and nobody takes the lock again. The counterexample
// is kept in testdata and replayed.
func TestFileSystemLockFileCrashOverNFS(t *testing.T) {
	RunFileSystem(t, FileSystem{Params: map[string]string{"fs": "nfs", "lease": "2s", "grace": "2s"}},
		func(fs *fsnode.Process) Lock { return &exclLock{fs: fs} },
		Options{TTL: 2 * time.Second, Classes: []Class{Crash}, Expect: Expect{Crash: Liveness}, Runs: 20})
}
