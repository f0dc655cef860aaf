package event

import "fmt"

// Text is the event's line in the text trace.
func (e *Event) Text() string { return string(e.AppendText(nil)) }

// AppendText appends the event's line in the text trace to b. This is the
// only place an event becomes English: the trace digest is taken over these
// lines, so the wording is part of every golden digest and changes only
// deliberately. Each family of kinds has its own renderer below.
func (e *Event) AppendText(b []byte) []byte {
	if out, ok := e.appendNetworkText(b); ok {
		return out
	}
	if out, ok := e.appendRedisText(b); ok {
		return out
	}
	if out, ok := e.appendRunText(b); ok {
		return out
	}
	if out, ok := e.appendClientText(b); ok {
		return out
	}
	if out, ok := e.appendZKText(b); ok {
		return out
	}
	if out, ok := e.appendDBText(b); ok {
		return out
	}
	if out, ok := e.appendFSEtcdText(b); ok {
		return out
	}
	return fmt.Appendf(b, "%s %+v", e.Kind, *e)
}

// appendNetworkText renders a note, or a message, command or connection of
// the Redis network; false for any other kind.
func (e *Event) appendNetworkText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case Note:
		return append(b, e.Note...), true

	case CommandSent:
		return fmt.Appendf(b, "send %s → %s", e.Command, e.Node), true
	case CommandExecuted:
		return fmt.Appendf(b, "%s → %s", e.Command, e.Reply), true
	case MessageLost:
		return fmt.Appendf(b, "lost %s %s→%s %s (%s)", e.Dir, e.From, e.To, e.Command, e.Reason), true
	case MessageDropped:
		return fmt.Appendf(b, "dropped %s %s→%s %s (%s)", e.Dir, e.From, e.To, e.Command, e.Reason), true
	case MessageDelayed:
		return fmt.Appendf(b, "delayed %s %s→%s %s by %v (%s)", e.Dir, e.From, e.To, e.Command, e.Delay, e.Reason), true
	case ReplyDiscarded:
		return fmt.Appendf(b, "reply on closed connection discarded: %s", e.Reply), true
	case ReplyTimeout:
		if e.Op != "" {
			return fmt.Appendf(b, "timeout waiting for %s from %s", e.Op, e.Node), true
		}
		return fmt.Appendf(b, "timeout waiting for %s", e.Node), true
	case ConnectionDialed:
		if e.From != "" {
			return fmt.Appendf(b, "dial %s (idle connection to %s dropped at +switch-master)", e.Node, e.From), true
		}
		return fmt.Appendf(b, "dial %s", e.Node), true
	case ConnectionClosed:
		return fmt.Appendf(b, "close connection to %s", e.Node), true
	case ConnectionMoved:
		return fmt.Appendf(b, "connection to %s closed under its command: the master moved to %s", e.Node, e.To), true
	}
	return b, false
}

// appendRedisText renders what a Redis node or Sentinel did; false for any
// other kind.
func (e *Event) appendRedisText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case KeyExpired:
		return fmt.Appendf(b, "key %s expired: propagate DEL", e.Key), true
	case ReplicationApplied:
		return fmt.Appendf(b, "replicated %s (offset %d)", e.Command, e.Offset), true
	case ReplicationLost:
		return fmt.Appendf(b, "replication of %s to %s lost: %s is down", e.Command, e.To, e.From), true
	case ReplicationFullSync:
		return fmt.Appendf(b, "full sync from %s: %d keys, offset %d", e.From, e.Keys, e.Offset), true
	case Promoted:
		return fmt.Appendf(b, "failover: %s promoted to master in place of %s", e.Node, e.From), true
	case ReplicaFollows:
		return fmt.Appendf(b, "sentinel: %s now replicates from %s", e.Node, e.To), true
	case MasterRejoined:
		return fmt.Appendf(b, "sentinel: old master %s rejoins as a replica of %s and drops its data", e.Node, e.To), true
	case NodeCrashed:
		return append(b, "node crash"...), true
	case NodeRestarted:
		return fmt.Appendf(b, "node restart with persistence %q (%d writes replayed, %d keys)", e.Persistence, e.Count, e.Keys), true
	}
	return b, false
}

// appendRunText renders what befell a host, the run or a fault; false for
// any other kind.
func (e *Event) appendRunText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case HostPaused:
		return append(b, "pause"...), true
	case HostResumed:
		return append(b, "resume"...), true
	case HostCrashed:
		return append(b, "crash"...), true
	case ProcessHung:
		return append(b, "hangs"...), true
	case ProcessContinued:
		return append(b, "continues"...), true

	case RunCut:
		if e.Reason == "same-instant" {
			return fmt.Appendf(b, "run cut short: simulated time stopped at %v: more than %d events at the same instant (a retry loop with no delay and no latency?)", e.At, e.Count), true
		}
		return fmt.Appendf(b, "run cut short: the run used its work budget of %d kernel steps (events scheduled, messages lost, bytes carried) at %v", e.Count, e.At), true

	case FaultSkipped:
		return fmt.Appendf(b, "skip %s: no %s in this run", e.Fault, e.Node), true
	case FaultApplied:
		return fmt.Appendf(b, "apply %s", e.Fault), true
	case FaultRefused:
		return fmt.Appendf(b, "failover refused: %s", e.Reason), true
	case FaultHealed:
		return fmt.Appendf(b, "heal %s", e.Fault), true
	}
	return b, false
}

// appendClientText renders a client's lock and critical section; false
// for any other kind.
func (e *Event) appendClientText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case AcquireFailed:
		return fmt.Appendf(b, "acquire failed: %s", e.Reason), true
	case AcquireGaveUp:
		return fmt.Appendf(b, "gave up: %s", e.Reason), true
	case HoldBegan:
		// A lock whose library keeps its token to itself (go-zookeeper's
		// zk.Lock) has none; a ZooKeeper lease has no deadline (Validity
		// 0): it lasts until its session is lost.
		b = fmt.Appendf(b, "holds %s (", e.Resource)
		if e.LockValue == "" {
			b = append(b, "no token"...)
		} else {
			b = fmt.Appendf(b, "token %s", e.LockValue)
		}
		if e.Validity == 0 {
			return fmt.Appendf(b, ", fence %d, held until its session is lost)", e.FencingToken), true
		}
		return fmt.Appendf(b, ", fence %d, valid until %s on its clock)", e.FencingToken, e.Validity), true
	case HoldLost:
		return append(b, "learns it lost the lock"...), true
	case RenewalFailed:
		return fmt.Appendf(b, "renewal of its lease failed: %s", e.Reason), true
	case WriteSkipped:
		if e.Reason == "lost" {
			return append(b, "learned it lost the lock: skips the write"...), true
		}
		return append(b, "lease expired on its own clock: skips the write"...), true
	case WriteRejected:
		return append(b, "write rejected by the resource"...), true
	case ReleaseFailed:
		return fmt.Appendf(b, "release failed: %s", e.Reason), true
	case Reentered:
		return fmt.Appendf(b, "nested call: acquires %s again (token %s)", e.Resource, e.LockValue), true
	case ReentryReleased:
		return fmt.Appendf(b, "nested call: releases %s (token %s); its outer section goes on", e.Resource, e.LockValue), true
	}
	return b, false
}

// appendZKText renders a ZooKeeper session, server or connection event;
// false for any other kind.
func (e *Event) appendZKText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case SessionCreated:
		return fmt.Appendf(b, "session %s created for %s (timeout %v)", e.Session, e.Conn, e.Timeout), true
	case SessionExpired:
		return fmt.Appendf(b, "session %s expired (no contact for %v)", e.Session, e.Delay), true
	case SessionReopened:
		return fmt.Appendf(b, "%s; closes its ZooKeeper handle and opens a new one (new session) starting at %s", e.Reason, e.Node), true
	case ServerCrashed:
		return append(b, "crash"...), true
	case ServerRestarted:
		return fmt.Appendf(b, "restart (%d transactions in its log)", e.Count), true
	case ServerStopped:
		return append(b, "stops serving"...), true
	case LeaderLost:
		return fmt.Appendf(b, "leader lost (epoch %d)", e.Epoch), true
	case LeaderElected:
		return fmt.Appendf(b, "elected leader (epoch %d, %d of %d servers)", e.Epoch, e.Count, e.Total), true
	case LeaderAtStart:
		return fmt.Appendf(b, "leads from the start (epoch %d, %d servers serving)", e.Epoch, e.Count), true
	case ServerFollows:
		return fmt.Appendf(b, "follows %s and serves", e.To), true
	case FrameHeld:
		return fmt.Appendf(b, "%s held (link cut or host paused): %s", e.Conn, e.Command), true
	case FrameReceived:
		return fmt.Appendf(b, "recv %s %s", e.Conn, e.Command), true
	case ConnReset:
		return fmt.Appendf(b, "connection %s reset: %s", e.Conn, e.Reason), true
	case ConnServerClosed:
		return fmt.Appendf(b, "closes connection %s", e.Conn), true
	case ConnClosedBy:
		return fmt.Appendf(b, "%s closed by the %s", e.Conn, e.Reason), true
	case ConnectNoAnswer:
		return fmt.Appendf(b, "connect to %s: no answer (partition)", e.Node), true
	case ConnectStarted:
		return fmt.Appendf(b, "connect %s", e.Conn), true
	case LinkCut:
		return fmt.Appendf(b, "link %s–%s cut", e.From, e.To), true
	case LinkHealed:
		return fmt.Appendf(b, "link %s–%s healed", e.From, e.To), true
	}
	return b, false
}

// appendDBText renders a database server's or connection's event
// (sim/dbnet); false for any other kind.
func (e *Event) appendDBText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case DBConnOpened:
		return fmt.Appendf(b, "dial %s", e.Conn), true
	case DBConnRefused:
		return fmt.Appendf(b, "dial %s refused: %s", e.Node, e.Reason), true
	case DBSegmentReceived:
		return fmt.Appendf(b, "recv %s %s", e.Conn, e.Command), true
	case DBSegmentHeld:
		return fmt.Appendf(b, "%s held (link cut or host paused): %s", e.Conn, e.Command), true
	case DBConnReset:
		return fmt.Appendf(b, "connection %s reset: %s", e.Conn, e.Reason), true
	case DBConnClosed:
		return fmt.Appendf(b, "%s closed by the %s", e.Conn, e.Reason), true
	case DBKeepaliveFailed:
		return fmt.Appendf(b, "keepalive probe %d of %d on %s unanswered", e.Count, e.Total, e.Conn), true
	case DBSessionEnded:
		return fmt.Appendf(b, "backend of %s ends (%s): its session locks are released", e.Conn, e.Reason), true
	case DBLockGranted:
		return fmt.Appendf(b, "%s: lock %s granted to the backend of %s", e.Op, e.Key, e.Conn), true
	case DBLockRefused:
		if e.Reason != "" {
			return fmt.Appendf(b, "%s: lock %s not granted to the backend of %s (%s)", e.Op, e.Key, e.Conn, e.Reason), true
		}
		return fmt.Appendf(b, "%s: lock %s busy for the backend of %s", e.Op, e.Key, e.Conn), true
	case DBLockReleased:
		return fmt.Appendf(b, "%s: lock %s released by the backend of %s", e.Op, e.Key, e.Conn), true
	case DBUnlockNotHeld:
		return fmt.Appendf(b, "%s: the backend of %s does not hold lock %s (false)", e.Op, e.Conn, e.Key), true
	case DBFenceCompared:
		return fmt.Appendf(b, "fence write %d on %s %s", e.FencingToken, e.Conn, e.Reason), true
	case DBServerCrashed:
		return append(b, "crash: every session ends, and its advisory locks with it"...), true
	case DBServerRestarted:
		return append(b, "restart with an empty lock table"...), true
	case DBPromoted:
		return fmt.Appendf(b, "promoted: now answers for the address %s, without any of the old primary's advisory locks", e.To), true
	case DBPoolMapped:
		return fmt.Appendf(b, "pool: %s %s %s", e.Conn, mappedVerb(e.Reason), e.Session), true
	}
	return b, false
}

// appendFSEtcdText renders an NFS server's or an etcd member's event;
// false for any other kind.
func (e *Event) appendFSEtcdText(b []byte) ([]byte, bool) {
	switch e.Kind {
	case FSLocksDropped:
		return fmt.Appendf(b, "%s lock of %s on %s released by %s", e.Op, e.Client, e.Key, e.Reason), true
	case FSLeaseExpired:
		return fmt.Appendf(b, "lease of client %s expired: %d lock(s) dropped", e.Client, e.Count), true
	case FSServerRestarted:
		return fmt.Appendf(b, "server restarted without its lock state: grace period of %v", e.Delay), true
	case FSLockLost:
		return fmt.Appendf(b, "%s learns its lock on %s is gone: %s", e.Client, e.Key, e.Reason), true

	case EtcdLeader:
		return fmt.Appendf(b, "leads raft term %d (%d members)", e.Epoch, e.Total), true
	case EtcdApplied:
		what := e.Key
		if e.Session != "" {
			what = "lease " + e.Session
		}
		return fmt.Appendf(b, "%s %s %s for %s → %s (revision %d)", e.Op, what, "applied", e.Client, e.Reply, e.Offset), true
	case EtcdLeaseExpired:
		return fmt.Appendf(b, "lease %s expired on the leader's clock (%v): revoke proposed", e.Session, e.Clock), true
	case EtcdLeaseRevoked:
		return fmt.Appendf(b, "lease %s revoked: %d keys deleted (revision %d)", e.Session, e.Keys, e.Offset), true
	case EtcdLeasePromoted:
		return fmt.Appendf(b, "lessor promoted: %d leases get their full TTL plus %v", e.Count, e.Delay), true
	case EtcdMemberCrashed:
		if e.Reason != "" {
			return fmt.Appendf(b, "etcd member crashes: %s", e.Reason), true
		}
		return append(b, "etcd member crashes"...), true
	case EtcdMemberStarted:
		return fmt.Appendf(b, "etcd member restarts, raft log %s (%d entries)", e.Persistence, e.Count), true
	}
	return b, false
}

// String is the event as a line of the text trace, with its time and actor.
func (e Event) String() string {
	return fmt.Sprintf("%12.6f %-10s %s", e.At.Seconds(), e.Actor, e.Text())
}

// mappedVerb says what a pooler did with a client's server connection.
func mappedVerb(what string) string {
	switch what {
	case "assigned":
		return "is served by"
	case "reset":
		return "done: reset query on"
	case "released":
		return "done: back to the pool:"
	case "closed":
		return "done: closed"
	}
	return what
}
