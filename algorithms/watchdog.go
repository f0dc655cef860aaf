package algorithms

// Watchdog renewal, as Redisson does it:
//
//	acquire:  take the lock with TTL, then in the background, every TTL/3:
//	          extend the key to TTL again (only if it still holds our token)
//	release:  stop the background renewal, then release.
//
// The holder never has to guess how long its work will take: it holds the
// lock until it releases it. Two weaknesses follow. The renewal goes on
// whether or not the worker makes progress, so a worker that hangs keeps the
// lock for as long as its process lives. And the holder is never told when a
// renewal fails: cut off from Redis, it keeps working while its key expires
// and another client takes the lock.

import "time"

// Watchdog renews Lock's lease in the background while it is held.
type Watchdog struct {
	Lock
	// Renewer extends the lease over connections of its own.
	Renewer Extender
	TTL     time.Duration
}

// farFuture is the validity of a lease with no deadline: the holder holds
// until it releases.
var farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

type renewal struct{ stopped bool }

// Acquire takes the lock and starts the renewal loop.
func (w *Watchdog) Acquire(env Env) (*Lease, error) {
	l, err := w.Lock.Acquire(env)
	if err != nil {
		return nil, err
	}
	r := &renewal{}
	l.Validity = farFuture
	l.renewal = r
	env.Go(func(bg Env) {
		for {
			bg.Sleep(w.TTL / 3)
			if r.stopped {
				return
			}
			if err := w.Renewer.Extend(bg, l); err != nil {
				// Redisson logs and gives up renewing; the holder is not told.
				l.RenewalFailed(err)
				return
			}
		}
	})
	return l, nil
}

// Release stops the renewal, then releases.
func (w *Watchdog) Release(env Env, l *Lease) error {
	if l.renewal != nil {
		l.renewal.stopped = true
	}
	return w.Lock.Release(env, l)
}
