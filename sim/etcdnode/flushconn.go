package etcdnode

// gRPC writes a connection from several goroutines through its own writer
// goroutine, which flushes whenever the Go scheduler lets it: how the bytes
// of one instant split into writes is the scheduler's choice. On sim/dbnet
// each write is a segment, named in the trace, so that choice would show.
// flushConn gathers what is written during one instant and hands it to the
// connection as one segment, at a world event keyed by the connection: the
// segments of a run depend only on what was written and when.

import (
	"net"
	"sync"

	"github.com/locklab/locklab/sim"
)

type flushConn struct {
	net.Conn
	w   *sim.World
	key string

	mu        sync.Mutex
	buf       []byte
	scheduled bool
	err       error
	closeOnce sync.Once
	done      chan struct{}
}

func newFlushConn(w *sim.World, c net.Conn, key string) *flushConn {
	return &flushConn{Conn: c, w: w, key: key, done: make(chan struct{})}
}

func (f *flushConn) Write(b []byte) (int, error) {
	f.mu.Lock()
	if f.err != nil {
		err := f.err
		f.mu.Unlock()
		return 0, err
	}
	f.buf = append(f.buf, b...)
	need := !f.scheduled
	f.scheduled = true
	f.mu.Unlock()
	if need {
		entered := false
		f.w.Notify(f.key, func() {
			entered = true
			f.w.AtKey(f.w.Now(), f.key, f.flush)
		})
		if !entered {
			return 0, errEnded
		}
	}
	return len(b), nil
}

// flush sends what the instant gathered (kernel held): on a goroutine,
// since the connection's Write enters the kernel itself. It runs before
// the kernel's next step.
func (f *flushConn) flush() {
	f.mu.Lock()
	data := f.buf
	f.buf = nil
	f.scheduled = false
	f.mu.Unlock()
	if len(data) == 0 {
		return
	}
	go func() {
		if _, err := f.Conn.Write(data); err != nil {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
			}
			f.mu.Unlock()
		}
	}()
}

// Close closes the connection once what was written has left: the close
// (a FIN) follows the last flush.
func (f *flushConn) Close() error {
	f.closeOnce.Do(func() {
		close(f.done)
		f.mu.Lock()
		pending := f.scheduled
		f.mu.Unlock()
		if !pending {
			_ = f.Conn.Close()
			return
		}
		entered := false
		f.w.Notify(f.key, func() {
			entered = true
			f.w.AtKey(f.w.Now(), f.key+" close", func() { go f.Conn.Close() })
		})
		if !entered {
			_ = f.Conn.Close()
		}
	})
	return nil
}
