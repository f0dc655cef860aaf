package event

// The kinds of fact a run records, grouped by who produces them.
const (
	// Note is an untyped line (World.Tracef): its whole text is in Note.
	Note Kind = "note"

	// The network and the connections clients keep.
	CommandSent      Kind = "command.sent"      // a client sends Command to Node
	CommandExecuted  Kind = "command.executed"  // Node ran Command and answered Reply
	MessageLost      Kind = "message.lost"      // partition or down receiver (Reason)
	MessageDropped   Kind = "message.dropped"   // a fault's filter dropped it (Reason)
	MessageDelayed   Kind = "message.delayed"   // a fault's filter held it back by Delay
	ReplyDiscarded   Kind = "reply.discarded"   // a reply reached a closed connection
	ReplyTimeout     Kind = "reply.timeout"     // the client gave up waiting for Node
	ConnectionDialed Kind = "connection.dialed" // a client dials Node (From: the master it left)
	ConnectionClosed Kind = "connection.closed" // the client closes its connection to Node
	ConnectionMoved  Kind = "connection.moved"  // closed under its command: the master moved to To

	// A Redis node's data, replication and failover.
	KeyExpired          Kind = "key.expired"          // Key expired on Node's clock (Clock)
	ReplicationApplied  Kind = "replication.applied"  // Node applied Command from From (Offset)
	ReplicationLost     Kind = "replication.lost"     // From was down: Command never reached To
	ReplicationFullSync Kind = "replication.fullsync" // Node copied From's data (Keys, Offset)
	Promoted            Kind = "failover.promoted"    // Node became master in place of From
	ReplicaFollows      Kind = "failover.follows"     // replica Node now replicates from To
	MasterRejoined      Kind = "failover.rejoined"    // old master Node rejoins as a replica of To
	NodeCrashed         Kind = "node.crashed"
	NodeRestarted       Kind = "node.restarted" // Persistence, Count writes replayed, Keys

	// Client hosts and processes.
	HostPaused       Kind = "host.paused"
	HostResumed      Kind = "host.resumed"
	HostCrashed      Kind = "host.crashed"
	ProcessHung      Kind = "process.hung"
	ProcessContinued Kind = "process.continued"

	// The kernel.
	RunCut Kind = "run.cut" // a limit (Reason: work or same-instant, Count: its bound) ended the run here

	// Faults.
	FaultSkipped Kind = "fault.skipped" // no Node of that name in this run
	FaultApplied Kind = "fault.applied"
	FaultRefused Kind = "fault.refused" // a failover the nodes could not make (Reason)
	FaultHealed  Kind = "fault.healed"

	// The workload's view of its lease.
	AcquireFailed Kind = "hold.refused" // Reason: the algorithm's error
	// AcquireGaveUp: the lock's own wait policy gave up (Reason): its
	// attempts ran out with the lock busy (algorithms.ErrNotAcquired).
	// The cycle ends without the lock; the workload does not try again.
	AcquireGaveUp Kind = "hold.gave_up"
	HoldBegan     Kind = "hold.began" // Resource, LockValue, FencingToken, Validity
	HoldLost      Kind = "hold.lost"  // the client learns it lost the lock
	// RenewalFailed: a background renewal (a watchdog's) of the lease
	// failed (Reason); whether the holder is told is the algorithm's
	// business (HoldLost says it was).
	RenewalFailed Kind = "hold.renewal.failed"
	WriteSkipped  Kind = "write.skipped"
	WriteRejected Kind = "write.rejected"
	ReleaseFailed Kind = "release.failed"
	// A nested section (clients.reenter): the holder acquires the same
	// lock again (LockValue: the inner lease's) and later releases that one.
	Reentered       Kind = "hold.reentered"
	ReentryReleased Kind = "hold.reentry.released"

	// The ZooKeeper ensemble.
	SessionCreated   Kind = "zk.session.created" // Session for Conn, Timeout
	SessionExpired   Kind = "zk.session.expired" // Session unheard for Delay
	SessionReopened  Kind = "zk.session.reopened"
	ServerCrashed    Kind = "zk.server.crashed"
	ServerRestarted  Kind = "zk.server.restarted" // Count transactions in its log
	ServerStopped    Kind = "zk.server.stopped"   // stops serving: no quorum
	LeaderLost       Kind = "zk.leader.lost"
	LeaderElected    Kind = "zk.leader.elected" // Epoch, Count of Total servers
	LeaderAtStart    Kind = "zk.leader.start"   // Epoch, Count servers serving
	ServerFollows    Kind = "zk.server.follows" // follows To and serves
	FrameHeld        Kind = "zk.frame.held"     // link cut or host paused
	FrameReceived    Kind = "zk.frame.received" // Actor received Command on Conn
	ConnReset        Kind = "zk.conn.reset"
	ConnServerClosed Kind = "zk.conn.closed.server" // the server closes Conn
	ConnClosedBy     Kind = "zk.conn.closed"        // Conn closed by Reason ("client", "server")
	ConnectNoAnswer  Kind = "zk.connect.unanswered"
	ConnectStarted   Kind = "zk.connect"
	LinkCut          Kind = "zk.link.cut"
	LinkHealed       Kind = "zk.link.healed"

	// Database servers on the simulated network (sim/dbnet): connections
	// carry segments of the real wire protocol; Conn names one
	// (client#dial>server), Session the server's backend for it.
	DBConnOpened      Kind = "db.conn.opened"      // Client dials Node (Conn)
	DBConnRefused     Kind = "db.conn.refused"     // Node is down (Reason)
	DBSegmentReceived Kind = "db.segment.received" // Actor received Command (Op, Dir) on Conn
	DBSegmentHeld     Kind = "db.segment.held"     // link cut or host paused: Command waits on Conn
	DBConnReset       Kind = "db.conn.reset"       // Conn reset (Reason)
	DBConnClosed      Kind = "db.conn.closed"      // Conn closed by Reason ("client", "server")
	DBKeepaliveFailed Kind = "db.keepalive.failed" // Node's probe Count of Total on Conn unanswered
	DBSessionEnded    Kind = "db.session.ended"    // Node ends the backend of Conn (Reason): its session locks go
	DBLockGranted     Kind = "db.lock.granted"     // Node grants Key to the backend of Conn (Op)
	DBLockRefused     Kind = "db.lock.refused"     // Key busy (Op), or the wait ended (Reason)
	DBLockReleased    Kind = "db.lock.released"    // the backend of Conn releases Key (Op)
	DBUnlockNotHeld   Kind = "db.unlock.notheld"   // an unlock on a backend that does not hold Key: false
	DBFenceCompared   Kind = "db.fence.compared"   // FencingToken written if above the row's version (Reason: accepted, rejected)
	DBServerCrashed   Kind = "db.server.crashed"   // every session of Node ends, its locks with them
	DBServerRestarted Kind = "db.server.restarted" // Node serves again with an empty lock table
	DBPromoted        Kind = "db.promoted"         // Node (a standby) now answers for To's address, without its locks
	// DBPoolMapped: pooler Node serves client connection Conn with its
	// server connection Session (a backend), or stops (Reason: assigned,
	// reset, released, closed).
	DBPoolMapped Kind = "db.pool.mapped"

	// File-system locks (sim/fsnode): Key names the file's inode.
	FSLocksDropped    Kind = "fs.locks.dropped"    // Client's Key lock (Op: flock, posix) went at Reason (a close, an exit)
	FSLeaseExpired    Kind = "fs.lease.expired"    // Node dropped Client's lease and its Count locks
	FSServerRestarted Kind = "fs.server.restarted" // Node lost its lock state; its grace period lasts Delay
	FSLockLost        Kind = "fs.lock.lost"        // Client's kernel learned its Key lock is gone (Reason)

	// The simulated etcd cluster (sim/etcdnode).
	EtcdLeader        Kind = "etcd.leader"         // Node leads raft term Epoch
	EtcdApplied       Kind = "etcd.applied"        // Node answered Client's Op on Key: Reply, at revision Offset
	EtcdLeaseExpired  Kind = "etcd.lease.expired"  // leader Node found lease Session past its TTL on its own clock (Clock) and proposes its revoke
	EtcdLeaseRevoked  Kind = "etcd.lease.revoked"  // Node applied the revoke of lease Session: Keys deleted, at revision Offset
	EtcdLeasePromoted Kind = "etcd.lease.promoted" // new leader Node gave each of Count leases its full TTL plus Delay (etcd's lessor Promote)
	EtcdMemberCrashed Kind = "etcd.member.crashed"
	EtcdMemberStarted Kind = "etcd.member.restarted" // Persistence: "log" (its raft log kept) or "empty"; Count entries in its log
)
