package pglock

// The Postgres reader-writer lock is the advisory lock in its two modes
// (PG15 manual, 9.27.10), as the DistributedLock library's
// PostgresDistributedReaderWriterLock takes it:
//
//	reader:   SELECT pg_advisory_lock_shared(k)   -- shares k with readers
//	writer:   SELECT pg_advisory_lock(k)          -- alone on k
//	release:  pg_advisory_unlock_shared(k) / pg_advisory_unlock(k)
//
// With wait: block the request waits in the server's lock queue, and the
// server grants in order: a new reader that conflicts with a writer
// already waiting waits behind it (lock.c checks the wait mask first), so
// readers cannot starve a writer. With wait: poll the client asks the
// try- variants (pg_try_advisory_lock_shared, pg_try_advisory_lock) and
// retries on false, as a client that must not block does: a polling
// writer never enters the queue, and readers that keep overlapping keep
// the key shared for as long as they come — the writer starves.
//
// As for the mutex, holds are the session's: a backend that dies frees
// them while its client, told nothing, reads or writes on.

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/locklab/locklab/algorithms"
)

var rwWaitParam = algorithms.Param{Name: "wait", Expect: "block or poll", Check: algorithms.OneOf("block", "poll")}

func init() {
	algorithms.Register(algorithms.Info{
		Name:    "pg-advisory-rw",
		Summary: "Postgres reader-writer lock on advisory locks through pgx: shared for readers, exclusive for writers; wait: block (the server's queue) or poll (try- and retry)",
		Backend: Backend, Bubble: true, Primitive: algorithms.PrimitiveReadWrite,
		Params: []algorithms.Param{rwWaitParam},
		New: func(p algorithms.Params, c algorithms.Conns) (algorithms.Lock, error) {
			client, ok := c.Backend.(*Client)
			if !ok || client == nil {
				return nil, fmt.Errorf("the Postgres advisory locks need the %q backend", Backend)
			}
			mode := p.Extra[algorithms.ParamMode]
			if mode == "" {
				mode = "write"
			}
			if mode != "read" && mode != "write" {
				return nil, fmt.Errorf("pg-advisory-rw: mode: expected read or write, found %q", mode)
			}
			l := &Lock{client: client, name: p.Key, key: AdvisoryKey(p.Key), wait: p.Wait}
			return &RWLock{Lock: l, Read: mode == "read", Block: p.Extra["wait"] == "block"}, nil
		},
	})
}

// RWLock is one client's side of the reader-writer lock: a reader's or a
// writer's, on the client's own connection.
type RWLock struct {
	*Lock
	Read  bool
	Block bool
}

// suffix is the advisory function's mode suffix.
func (l *RWLock) suffix() string {
	if l.Read {
		return "_shared"
	}
	return ""
}

// Acquire waits in the server's queue (Block) or polls under the wait
// policy.
func (l *RWLock) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	if l.Block {
		if _, err := l.exec(env, "SELECT pg_advisory_lock"+l.suffix()+"($1)", l.key); err != nil {
			return nil, err
		}
		return l.lease(env), nil
	}
	return l.wait.Retry(env, func() (*algorithms.Lease, error) {
		var ok bool
		if err := l.query(env, &ok, "SELECT pg_try_advisory_lock"+l.suffix()+"($1)", l.key); err != nil {
			return nil, err
		}
		if !ok {
			return nil, algorithms.ErrNotAcquired
		}
		return l.lease(env), nil
	})
}

func (l *RWLock) lease(env algorithms.Env) *algorithms.Lease {
	now := env.Now()
	return &algorithms.Lease{Resource: l.name, LockValue: strconv.FormatInt(l.key, 10), Start: now, Validity: now.Add(algorithms.NoDeadline)}
}

// Release unlocks in the mode it locked.
func (l *RWLock) Release(env algorithms.Env, _ *algorithms.Lease) error {
	var ok bool
	if err := l.query(env, &ok, "SELECT pg_advisory_unlock"+l.suffix()+"($1)", l.key); err != nil {
		return err
	}
	if !ok {
		return errors.New("pg_advisory_unlock" + l.suffix() + " returned false: the backend it ran on did not hold the lock")
	}
	return nil
}
