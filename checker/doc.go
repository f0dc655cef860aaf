// Package checker turns the history of a run into a verdict and a witness.
//
// # What a violation is
//
// Mutual exclusion is judged on what clients do (docs/design.md, "What a
// violation is"). A client holds the lock from the return of a successful
// acquire until the first of:
//
//   - it calls release ("release");
//   - it crashes ("crash");
//   - it learns it lost the lock: a ZooKeeper session going SUSPENDED or
//     LOST, a failed renewal (Lease.MarkLost, "lost");
//   - it checks its own lease, finds it run out and stops acting
//     ("validity": the workload's check_validity test before the write).
//
// A lease deadline the client never consults does not end its hold:
// Kleppmann's paused client wakes up believing it holds the lock, and writes.
// Two holds that overlap in true time are a violation, also when both belong
// to one client. Holds are half-open, [start, end): a release and an acquire
// at the same instant do not overlap.
//
// porcupine decides mutual exclusion over a mutex model whose operations are
// the instants holds begin and end (call == return), so its search is linear
// and always finishes; no timeout, no dependence on machine speed. A history
// is split into independent segments at instants where nobody holds, each
// checked by porcupine from the free state. An exact interval sweep must
// agree with porcupine on every history and names the witness pair.
//
// Resource safety: every accepted write of the protected resource (an
// inventory counter that a critical section reads, works on, and writes
// back minus one) is checked, the first included, against the value the
// resource held and against the read it was based on. Witness kinds: "lost
// update" (writes by others came between the writer's read and its write),
// "ABA" (they did, yet the value came back to what was read), "stale base"
// (the write is based on a value the resource did not hold and no write
// explains), "not read-1" (the written value is not the read value minus
// one: items skipped or sold twice), "duplicate token" (two clients' writes
// accepted under one fencing token), "stale token" (a write accepted with a
// token lower than one the resource already accepted).
//
// Liveness: the lock must not stay unavailable (nobody holds it while some
// client wants it) for longer than a bound. Unavailability a fault causes is
// excused and listed in the witness: a waiter's own pause (a paused client
// is not a live waiter), delayed messages while they are held back, a
// partition or a drop rule while it lasts, a node's downtime until its
// restart. A fault that never heals excuses nothing: a partition for good
// or a node that never returns still counts against the lock.
package checker
