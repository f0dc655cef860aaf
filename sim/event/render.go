package event

import "fmt"

// Text is the event's line in the text trace.
func (e *Event) Text() string { return string(e.AppendText(nil)) }

// AppendText appends the event's line in the text trace to b. This is the
// only place an event becomes English: the trace digest is taken over these
// lines, so the wording is part of every golden digest and changes only
// deliberately.
func (e *Event) AppendText(b []byte) []byte {
	switch e.Kind {
	case Note:
		return append(b, e.Note...)

	case CommandSent:
		return fmt.Appendf(b, "send %s → %s", e.Command, e.Node)
	case CommandExecuted:
		return fmt.Appendf(b, "%s → %s", e.Command, e.Reply)
	case MessageLost:
		return fmt.Appendf(b, "lost %s %s→%s %s (%s)", e.Dir, e.From, e.To, e.Command, e.Reason)
	case MessageDropped:
		return fmt.Appendf(b, "dropped %s %s→%s %s (%s)", e.Dir, e.From, e.To, e.Command, e.Reason)
	case MessageDelayed:
		return fmt.Appendf(b, "delayed %s %s→%s %s by %v (%s)", e.Dir, e.From, e.To, e.Command, e.Delay, e.Reason)
	case ReplyDiscarded:
		return fmt.Appendf(b, "reply on closed connection discarded: %s", e.Reply)
	case ReplyTimeout:
		if e.Op != "" {
			return fmt.Appendf(b, "timeout waiting for %s from %s", e.Op, e.Node)
		}
		return fmt.Appendf(b, "timeout waiting for %s", e.Node)
	case ConnectionDialed:
		if e.From != "" {
			return fmt.Appendf(b, "dial %s (idle connection to %s dropped at +switch-master)", e.Node, e.From)
		}
		return fmt.Appendf(b, "dial %s", e.Node)
	case ConnectionClosed:
		return fmt.Appendf(b, "close connection to %s", e.Node)
	case ConnectionMoved:
		return fmt.Appendf(b, "connection to %s closed under its command: the master moved to %s", e.Node, e.To)

	case KeyExpired:
		return fmt.Appendf(b, "key %s expired: propagate DEL", e.Key)
	case ReplicationApplied:
		return fmt.Appendf(b, "replicated %s (offset %d)", e.Command, e.Offset)
	case ReplicationLost:
		return fmt.Appendf(b, "replication of %s to %s lost: %s is down", e.Command, e.To, e.From)
	case ReplicationFullSync:
		return fmt.Appendf(b, "full sync from %s: %d keys, offset %d", e.From, e.Keys, e.Offset)
	case Promoted:
		return fmt.Appendf(b, "failover: %s promoted to master in place of %s", e.Node, e.From)
	case ReplicaFollows:
		return fmt.Appendf(b, "sentinel: %s now replicates from %s", e.Node, e.To)
	case MasterRejoined:
		return fmt.Appendf(b, "sentinel: old master %s rejoins as a replica of %s and drops its data", e.Node, e.To)
	case NodeCrashed:
		return append(b, "node crash"...)
	case NodeRestarted:
		return fmt.Appendf(b, "node restart with persistence %q (%d writes replayed, %d keys)", e.Persistence, e.Count, e.Keys)

	case HostPaused:
		return append(b, "pause"...)
	case HostResumed:
		return append(b, "resume"...)
	case HostCrashed:
		return append(b, "crash"...)
	case ProcessHung:
		return append(b, "hangs"...)
	case ProcessContinued:
		return append(b, "continues"...)

	case RunCut:
		if e.Reason == "same-instant" {
			return fmt.Appendf(b, "run cut short: simulated time stopped at %v: more than %d events at the same instant (a retry loop with no delay and no latency?)", e.At, e.Count)
		}
		return fmt.Appendf(b, "run cut short: the run used its work budget of %d kernel steps (events scheduled, messages lost, bytes carried) at %v", e.Count, e.At)

	case FaultSkipped:
		return fmt.Appendf(b, "skip %s: no %s in this run", e.Fault, e.Node)
	case FaultApplied:
		return fmt.Appendf(b, "apply %s", e.Fault)
	case FaultRefused:
		return fmt.Appendf(b, "failover refused: %s", e.Reason)
	case FaultHealed:
		return fmt.Appendf(b, "heal %s", e.Fault)

	case AcquireFailed:
		return fmt.Appendf(b, "acquire failed: %s", e.Reason)
	case AcquireGaveUp:
		return fmt.Appendf(b, "gave up: %s", e.Reason)
	case HoldBegan:
		// A lock whose library keeps its token to itself (go-zookeeper's
		// zk.Lock) has none; a ZooKeeper lease has no deadline (Validity
		// 0): it lasts until its session is lost.
		b = fmt.Appendf(b, "holds %s (", e.Resource)
		if e.Token == "" {
			b = append(b, "no token"...)
		} else {
			b = fmt.Appendf(b, "token %s", e.Token)
		}
		if e.Validity == 0 {
			return fmt.Appendf(b, ", fence %d, held until its session is lost)", e.Fence)
		}
		return fmt.Appendf(b, ", fence %d, valid until %s on its clock)", e.Fence, e.Validity)
	case HoldLost:
		return append(b, "learns it lost the lock"...)
	case RenewalFailed:
		return fmt.Appendf(b, "renewal of its lease failed: %s", e.Reason)
	case WriteSkipped:
		if e.Reason == "lost" {
			return append(b, "learned it lost the lock: skips the write"...)
		}
		return append(b, "lease expired on its own clock: skips the write"...)
	case WriteRejected:
		return append(b, "write rejected by the resource"...)
	case ReleaseFailed:
		return fmt.Appendf(b, "release failed: %s", e.Reason)
	case Reentered:
		return fmt.Appendf(b, "nested call: acquires %s again (token %s)", e.Resource, e.Token)
	case ReentryReleased:
		return fmt.Appendf(b, "nested call: releases %s (token %s); its outer section goes on", e.Resource, e.Token)

	case SessionCreated:
		return fmt.Appendf(b, "session %s created for %s (timeout %v)", e.Session, e.Conn, e.Timeout)
	case SessionExpired:
		return fmt.Appendf(b, "session %s expired (no contact for %v)", e.Session, e.Delay)
	case SessionReopened:
		return fmt.Appendf(b, "%s; closes its ZooKeeper handle and opens a new one (new session) starting at %s", e.Reason, e.Node)
	case ServerCrashed:
		return append(b, "crash"...)
	case ServerRestarted:
		return fmt.Appendf(b, "restart (%d transactions in its log)", e.Count)
	case ServerStopped:
		return append(b, "stops serving"...)
	case LeaderLost:
		return fmt.Appendf(b, "leader lost (epoch %d)", e.Epoch)
	case LeaderElected:
		return fmt.Appendf(b, "elected leader (epoch %d, %d of %d servers)", e.Epoch, e.Count, e.Total)
	case LeaderAtStart:
		return fmt.Appendf(b, "leads from the start (epoch %d, %d servers serving)", e.Epoch, e.Count)
	case ServerFollows:
		return fmt.Appendf(b, "follows %s and serves", e.To)
	case FrameHeld:
		return fmt.Appendf(b, "%s held (link cut or host paused): %s", e.Conn, e.Command)
	case FrameReceived:
		return fmt.Appendf(b, "recv %s %s", e.Conn, e.Command)
	case ConnReset:
		return fmt.Appendf(b, "connection %s reset: %s", e.Conn, e.Reason)
	case ConnServerClosed:
		return fmt.Appendf(b, "closes connection %s", e.Conn)
	case ConnClosedBy:
		return fmt.Appendf(b, "%s closed by the %s", e.Conn, e.Reason)
	case ConnectNoAnswer:
		return fmt.Appendf(b, "connect to %s: no answer (partition)", e.Node)
	case ConnectStarted:
		return fmt.Appendf(b, "connect %s", e.Conn)
	case LinkCut:
		return fmt.Appendf(b, "link %s–%s cut", e.From, e.To)
	case LinkHealed:
		return fmt.Appendf(b, "link %s–%s healed", e.From, e.To)

	case DBConnOpened:
		return fmt.Appendf(b, "dial %s", e.Conn)
	case DBConnRefused:
		return fmt.Appendf(b, "dial %s refused: %s", e.Node, e.Reason)
	case DBSegmentReceived:
		return fmt.Appendf(b, "recv %s %s", e.Conn, e.Command)
	case DBSegmentHeld:
		return fmt.Appendf(b, "%s held (link cut or host paused): %s", e.Conn, e.Command)
	case DBConnReset:
		return fmt.Appendf(b, "connection %s reset: %s", e.Conn, e.Reason)
	case DBConnClosed:
		return fmt.Appendf(b, "%s closed by the %s", e.Conn, e.Reason)
	case DBKeepaliveFailed:
		return fmt.Appendf(b, "keepalive probe %d of %d on %s unanswered", e.Count, e.Total, e.Conn)
	case DBSessionEnded:
		return fmt.Appendf(b, "backend of %s ends (%s): its session locks are released", e.Conn, e.Reason)
	case DBLockGranted:
		return fmt.Appendf(b, "%s: lock %s granted to the backend of %s", e.Op, e.Key, e.Conn)
	case DBLockRefused:
		if e.Reason != "" {
			return fmt.Appendf(b, "%s: lock %s not granted to the backend of %s (%s)", e.Op, e.Key, e.Conn, e.Reason)
		}
		return fmt.Appendf(b, "%s: lock %s busy for the backend of %s", e.Op, e.Key, e.Conn)
	case DBLockReleased:
		return fmt.Appendf(b, "%s: lock %s released by the backend of %s", e.Op, e.Key, e.Conn)
	case DBUnlockNotHeld:
		return fmt.Appendf(b, "%s: the backend of %s does not hold lock %s (false)", e.Op, e.Conn, e.Key)
	case DBFenceCompared:
		return fmt.Appendf(b, "fence write %d on %s %s", e.Fence, e.Conn, e.Reason)
	case DBServerCrashed:
		return append(b, "crash: every session ends, and its advisory locks with it"...)
	case DBServerRestarted:
		return append(b, "restart with an empty lock table"...)
	case DBPromoted:
		return fmt.Appendf(b, "promoted: now answers for the address %s, without any of the old primary's advisory locks", e.To)

	case FSLocksDropped:
		return fmt.Appendf(b, "%s lock of %s on %s released by %s", e.Op, e.Client, e.Key, e.Reason)
	case FSLeaseExpired:
		return fmt.Appendf(b, "lease of client %s expired: %d lock(s) dropped", e.Client, e.Count)
	case FSServerRestarted:
		return fmt.Appendf(b, "server restarted without its lock state: grace period of %v", e.Delay)
	case FSLockLost:
		return fmt.Appendf(b, "%s learns its lock on %s is gone: %s", e.Client, e.Key, e.Reason)

	case EtcdLeader:
		return fmt.Appendf(b, "leads raft term %d (%d members)", e.Epoch, e.Total)
	case EtcdApplied:
		what := e.Key
		if e.Session != "" {
			what = "lease " + e.Session
		}
		return fmt.Appendf(b, "%s %s %s for %s → %s (revision %d)", e.Op, what, "applied", e.Client, e.Reply, e.Offset)
	case EtcdLeaseExpired:
		return fmt.Appendf(b, "lease %s expired on the leader's clock (%v): revoke proposed", e.Session, e.Clock)
	case EtcdLeaseRevoked:
		return fmt.Appendf(b, "lease %s revoked: %d keys deleted (revision %d)", e.Session, e.Keys, e.Offset)
	case EtcdLeasePromoted:
		return fmt.Appendf(b, "lessor promoted: %d leases get their full TTL plus %v", e.Count, e.Delay)
	case EtcdMemberCrashed:
		if e.Reason != "" {
			return fmt.Appendf(b, "etcd member crashes: %s", e.Reason)
		}
		return append(b, "etcd member crashes"...)
	case EtcdMemberStarted:
		return fmt.Appendf(b, "etcd member restarts, raft log %s (%d entries)", e.Persistence, e.Count)
	}
	return fmt.Appendf(b, "%s %+v", e.Kind, *e)
}

// String is the event as a line of the text trace, with its time and actor.
func (e Event) String() string {
	return fmt.Sprintf("%12.6f %-10s %s", e.At.Seconds(), e.Actor, e.Text())
}
