package etcdnode

// clientv3's watcher wraps each watch stream's context in a valCtx, "a
// Context that forwards values but not cancellation", whose Done returns a
// channel the package makes at init and never closes (client/v3/watch.go:
// valCtxCh). context.WithCancel on such a parent starts a goroutine that
// selects on that channel; a channel made outside a synctest bubble is not
// durably blocking, so synctest.Wait would wait for that goroutine forever
// and the kernel would hang at the first watch. A nil Done says the same
// thing — "never cancelled" — and context.WithCancel starts no goroutine
// for it. So the variable is set to nil once, at init, before any bubble
// runs; the client's code is untouched.

import (
	_ "unsafe" // go:linkname

	_ "go.etcd.io/etcd/client/v3"
)

//go:linkname valCtxCh go.etcd.io/etcd/client/v3.valCtxCh
var valCtxCh chan struct{}

func init() { valCtxCh = nil }
