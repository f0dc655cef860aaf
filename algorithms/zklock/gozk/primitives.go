package gozk

// The semaphore and the reader-writer lock registered as algorithms for
// scenario files, on the same backend as the mutex recipes: clients
// declare permits (a semaphore) or mode: read|write (a reader-writer
// lock) and the scenario runner hands them over in Params.Extra.

import (
	"fmt"
	"strconv"

	"github.com/locklab/locklab/algorithms"
)

func init() {
	algorithms.Register(algorithms.Info{
		Name:      "gozk-semaphore",
		Summary:   "Curator InterProcessSemaphoreV2 on the real client: leases as ephemeral sequential nodes, counted under a mutex",
		Backend:   Backend,
		Fencing:   algorithms.FencingBuiltIn, // the lease node's sequence (ensembleLock.Acquire)
		Bubble:    true,
		Primitive: algorithms.PrimitiveSemaphore,
		Params:    []algorithms.Param{stopOnDisconnectParam},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			leases := 1
			if v, ok := p.Extra[algorithms.ParamPermits]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("gozk-semaphore: permits: expected a number >= 1, found %q", v)
				}
				leases = n
			}
			return build("gozk-semaphore", p, c, func(l *ensembleLock, s *Session, dir string) {
				sem := NewSemaphore(s.Conn, dir, leases)
				sem.Mutex.Rand, sem.Mutex.Settle = s.Rand, s.Settle
				sem.Rand, sem.Settle = s.Rand, s.Settle
				l.lock = sem.Acquire
				l.unlock = sem.Release
				if s.AtEnd != nil {
					s.AtEnd(sem.Stop)
				}
			})
		},
	})
	algorithms.Register(algorithms.Info{
		Name:      "gozk-rwlock",
		Summary:   "Curator InterProcessReadWriteLock on the real client: protected read- and write- sequential nodes in one queue",
		Backend:   Backend,
		Fencing:   algorithms.FencingBuiltIn, // the lease node's sequence (ensembleLock.Acquire)
		Bubble:    true,
		Primitive: algorithms.PrimitiveReadWrite,
		Params:    []algorithms.Param{stopOnDisconnectParam},
		New:       rwRecipe("gozk-rwlock", false),
	})
	algorithms.Register(algorithms.Info{
		Name:      "gozk-rwlock-naive",
		Summary:   "ZooKeeper reader-writer lock on the real client as first written: node names without a GUID, so a lost create reply leaves an orphan",
		Backend:   Backend,
		Fencing:   algorithms.FencingBuiltIn, // the lease node's sequence (ensembleLock.Acquire)
		Bubble:    true,
		Primitive: algorithms.PrimitiveReadWrite,
		Params:    []algorithms.Param{stopOnDisconnectParam},
		New:       rwRecipe("gozk-rwlock-naive", true),
	})
}

// rwRecipe builds the reader-writer lock, fixed or naive, on a client's
// session, in the mode the client declares (a writer by default).
func rwRecipe(name string, naive bool) func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
	return func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
		mode := p.Extra[algorithms.ParamMode]
		if mode == "" {
			mode = "write"
		}
		if mode != "read" && mode != "write" {
			return nil, fmt.Errorf("%s: mode: expected read or write, found %q", name, mode)
		}
		return build(name, p, c, func(l *ensembleLock, s *Session, dir string) {
			rw := NewRWLock(s.Conn, dir, mode == "read")
			rw.Naive, rw.Rand, rw.Settle = naive, s.Rand, s.Settle
			l.lock = rw.Lock
			l.unlock = rw.Unlock
			if s.AtEnd != nil {
				s.AtEnd(rw.Stop)
			}
		})
	}
}
