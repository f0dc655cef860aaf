package zklock

// The queue lock: ZooKeeper's lock recipe, as Apache Curator's
// InterProcessMutex implements it.
//
//	acquire:  create /locks/<key>/lock- ephemeral-sequential   → lock-0000000007
//	          loop:
//	            children = getChildren(/locks/<key>), sorted by sequence
//	            if ours is the lowest: we hold the lock
//	            getData(the child just before ours, watch)     -- only our predecessor
//	            wait for the watch, then loop
//	release:  delete our node
//
// Each waiter watches only its predecessor, so a release wakes exactly one
// client (no herd), and the queue is fair. The node is ephemeral: if the
// holder's session expires, the server deletes it and the next in line
// takes over. Two weaknesses remain:
//
//   - The session can expire on the server while the holder still believes
//     it holds: a pause longer than the session timeout, or a partition
//     during which the client waits for LOST (one session timeout after
//     SUSPENDED, by Curator's default) while the server has already
//     expired it. Stopping on SUSPENDED (stop_on_suspended) closes the
//     partition gap, but no client can notice a pause it is in; only a
//     fencing token — the node's sequence number or creation zxid, checked
//     by the resource — makes the stale holder's writes harmless.
//   - A create whose reply is lost may have happened. Retrying it blindly
//     makes a second node; the first, an orphan nobody knows about, is the
//     lowest and blocks the queue for as long as the session lives.
//     Curator's protected names (guid_protection) put a GUID in the name so
//     the retry can find the node it already made.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/sim/zk"
)

// Queue is Curator's InterProcessMutex over one client's connection.
//
// Two of Curator's behaviours decide whether it survives lost replies, and
// both are on in NewQueue (zk-queue) and off in the naive variant
// (zk-queue-naive, the recipe as locklab first had it):
//   - LookupRetry: the lookup for our GUID after a create without a reply
//     is retried until it is answered; if it never is, Acquire fails and a
//     background task finds and deletes our node (Curator's
//     findAndDeleteProtectedNodeInBackground). The naive recipe takes an
//     unanswered lookup for "not there", creates a second node and waits on
//     its own orphan.
//   - GuaranteedDelete: a release whose DELETE gets no reply is retried in
//     the background until it is answered, the node is gone or the session
//     is (Curator's guaranteed()). The naive release returns the error and
//     leaves the node, and the lock, to the session's lifetime.
type Queue struct {
	Conn *zk.Conn
	// Dir is the lock's parent node, /locks/<key>.
	Dir string
	// Protected puts a GUID in the node name (Curator's withProtection).
	Protected bool
	// StopOnSuspended marks the lease lost on SUSPENDED, not only on LOST.
	StopOnSuspended bool
	// Fencing chooses the lease's fencing token.
	Fencing Fencing
	// Retries and Backoff are the retry policy for a create that got no
	// reply (Curator's RetryPolicy).
	Retries int
	Backoff time.Duration
	// LookupRetry and GuaranteedDelete: see the type's comment.
	LookupRetry      bool
	GuaranteedDelete bool

	holder holder
}

// NewQueue makes the lock with Curator's defaults: protected names, three
// retries.
func NewQueue(conn *zk.Conn, dir string) *Queue {
	q := &Queue{Conn: conn, Dir: dir, Protected: true, Fencing: FenceNone, Retries: 3, Backoff: 100 * time.Millisecond,
		LookupRetry: true, GuaranteedDelete: true}
	conn.AddListener(func(s zk.State) { q.holder.stateChanged(s, q.StopOnSuspended) })
	return q
}

// Acquire joins the queue and waits for its turn.
func (q *Queue) Acquire(env algorithms.Env) (*algorithms.Lease, error) {
	start := env.Now()
	ourPath, stat, err := q.createOurNode(env)
	if err != nil {
		return nil, err
	}
	ours := ourPath[strings.LastIndexByte(ourPath, '/')+1:]
	for {
		children, _, err := q.Conn.Children(q.Dir)
		if err != nil {
			q.deleteOurNode(ourPath)
			return nil, err
		}
		bySequence(children)
		i := slices.Index(children, ours)
		if i < 0 {
			return nil, fmt.Errorf("our node %s is gone (its session expired)", ourPath)
		}
		if i == 0 {
			return q.grant(env, start, ourPath, stat)
		}
		_, _, watch, err := q.Conn.GetW(q.Dir + "/" + children[i-1])
		if errors.Is(err, zk.ErrNoNode) {
			continue // the predecessor left meanwhile: look again
		}
		if err != nil {
			q.deleteOurNode(ourPath)
			return nil, err
		}
		if ev, _ := watch.Wait(zk.NoTimeout); ev.Err != nil {
			q.deleteOurNode(ourPath)
			return nil, ev.Err
		}
	}
}

// createOurNode creates our ephemeral-sequential node, making the parents
// if they are missing, and retries a create that got no reply. With
// protection, a retry first looks for a child carrying our GUID: the lost
// create may have happened.
func (q *Queue) createOurNode(env algorithms.Env) (string, *zk.Stat, error) {
	prefix := "lock-"
	if q.Protected {
		prefix = "_c_" + guid(env) + "-lock-"
	}
	for retries := 0; ; {
		if retries > 0 && q.Protected {
			path, stat, ok, err := q.findProtected(env, prefix)
			if ok {
				return path, stat, nil
			}
			if err != nil {
				// Unanswered: our node may exist. Do not make a second
				// one; delete the first when the ensemble answers again.
				q.deleteProtectedInBackground(env, prefix)
				return "", nil, err
			}
		}
		path, stat, err := q.Conn.Create2(q.Dir+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence)
		switch {
		case err == nil:
			return path, stat, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := q.makeParents(); err != nil {
				return "", nil, err
			}
		case errors.Is(err, zk.ErrConnectionLoss) && retries < q.Retries:
			retries++
			env.Sleep(q.Backoff)
		default:
			return "", nil, err
		}
	}
}

// findProtected looks for the child whose name carries our GUID. With
// LookupRetry an unanswered lookup is retried (up to ten times); without,
// it counts as "not found". err is set when no answer ever came.
func (q *Queue) findProtected(env algorithms.Env, prefix string) (string, *zk.Stat, bool, error) {
	for try := 0; ; try++ {
		children, _, err := q.Conn.Children(q.Dir)
		if err != nil {
			if !q.LookupRetry {
				return "", nil, false, nil
			}
			if !errors.Is(err, zk.ErrConnectionLoss) || try >= 10 {
				return "", nil, false, err
			}
			env.Sleep(q.Backoff)
			continue
		}
		for _, c := range children {
			if strings.HasPrefix(c, prefix) {
				path := q.Dir + "/" + c
				if ok, stat, err := q.Conn.Exists(path); err == nil && ok {
					return path, stat, true, nil
				}
			}
		}
		return "", nil, false, nil
	}
}

// deleteProtectedInBackground finds the child carrying our GUID and
// deletes it, retrying until the ensemble answers or the session is gone.
func (q *Queue) deleteProtectedInBackground(env algorithms.Env, prefix string) {
	env.Go(func(env algorithms.Env) {
		for q.Conn.State() != zk.Lost && q.Conn.State() != zk.Closed {
			children, _, err := q.Conn.Children(q.Dir)
			if err == nil {
				for _, c := range children {
					if strings.HasPrefix(c, prefix) {
						q.guaranteedDelete(env, q.Dir+"/"+c)
					}
				}
				return
			}
			env.Sleep(q.Backoff)
		}
	})
}

// guaranteedDelete deletes path, retrying deletes that get no reply until
// one is answered or the session is lost.
func (q *Queue) guaranteedDelete(env algorithms.Env, path string) {
	for {
		err := q.Conn.Delete(path, -1)
		if !errors.Is(err, zk.ErrConnectionLoss) || q.Conn.State() == zk.Lost || q.Conn.State() == zk.Closed {
			return
		}
		env.Sleep(q.Backoff)
	}
}

// makeParents creates the persistent parents of the lock's nodes.
func (q *Queue) makeParents() error {
	for i := 1; i <= len(q.Dir); i++ {
		if i < len(q.Dir) && q.Dir[i] != '/' {
			continue
		}
		if _, err := q.Conn.Create(q.Dir[:i], nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

func (q *Queue) grant(env algorithms.Env, start time.Time, ourPath string, stat *zk.Stat) (*algorithms.Lease, error) {
	l := &algorithms.Lease{Resource: q.Dir, Token: ourPath, Start: start, Validity: start.Add(forever)}
	switch q.Fencing {
	case FenceSequence:
		seq, _ := zk.Sequence(ourPath)
		l.Fence = seq + 1
	case FenceZxid:
		l.Fence = stat.Czxid
	}
	return q.holder.grant(l, q.Conn, q.StopOnSuspended), nil
}

// Release deletes our node; one that is already gone (the session
// expired) is not an error.
func (q *Queue) Release(env algorithms.Env, l *algorithms.Lease) error {
	q.holder.release(l)
	err := q.Conn.Delete(l.Token, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if errors.Is(err, zk.ErrConnectionLoss) && q.GuaranteedDelete {
		path := l.Token
		env.Go(func(env algorithms.Env) { q.guaranteedDelete(env, path) })
		return nil
	}
	return err
}

func (q *Queue) deleteOurNode(path string) {
	_ = q.Conn.Delete(path, -1)
}
