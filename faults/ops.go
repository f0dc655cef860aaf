package faults

import (
	"slices"
	"strings"
)

// The ops a message pattern or trigger may name: what the simulated
// network carries. A Redis message's op is its command name as go-redis
// sends it; the protected resource sees READ and WRITE; a ZooKeeper
// connection carries the requests of the ZooKeeper protocol (and WATCH
// notifications, which travel as replies); REPLICATE is the stream from a
// master to its replicas. An op outside this vocabulary cannot match
// anything, so it is a typo, refused with a did-you-mean. A host that
// learns to send a new op must add it here.
var (
	// RedisOps are Redis commands (https://redis.io/commands), the ones a
	// lock or the harness may send.
	RedisOps = []string{
		"APPEND", "AUTH", "CLIENT", "COMMAND", "DECR", "DECRBY", "DEL", "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO",
		"EXEC", "EXISTS", "EXPIRE", "EXPIREAT", "FCALL", "GET", "GETDEL", "GETEX", "GETSET", "HDEL", "HELLO",
		"HEXISTS", "HGET", "HGETALL", "HINCRBY", "HSET", "HSETNX", "INCR", "INCRBY", "INFO", "KEYS", "MGET",
		"MULTI", "MSET", "PERSIST", "PEXPIRE", "PEXPIREAT", "PING", "PSETEX", "PTTL", "PUBLISH", "READONLY",
		"SCRIPT", "SELECT", "SET", "SETEX", "SETNX", "SUBSCRIBE", "TTL", "TYPE", "UNLINK", "UNWATCH", "WAIT",
		"WAITAOF", "WATCH", "REPLICAOF", "SLAVEOF", "ROLE", "SENTINEL", "REPLCONF", "PSYNC", "SYNC", "FAILOVER",
	}
	// ZooKeeperOps are the requests of the simulated ZooKeeper protocol.
	ZooKeeperOps = []string{"CONNECT", "PING", "CREATE", "CREATE2", "CREATETTL", "CREATECONTAINER", "DELETE", "EXISTS", "GETDATA", "SETDATA",
		"CHILDREN", "GETCHILDREN", "GETCHILDREN2", "MULTI", "CHECK", "SYNC", "SETWATCHES", "SETWATCHES2", "ADDWATCH", "REMOVEWATCHES",
		"WATCH", "CLOSE", "AUTH", "GETACL", "SETACL"}
	// PostgresOps are what a Postgres connection carries (sim/pgnode's
	// codec): the advisory lock functions by name, transaction control,
	// the fence row's read and write, and the protocol's own steps.
	PostgresOps = []string{"PG_ADVISORY_LOCK", "PG_ADVISORY_LOCK_SHARED", "PG_TRY_ADVISORY_LOCK", "PG_TRY_ADVISORY_LOCK_SHARED",
		"PG_ADVISORY_XACT_LOCK", "PG_ADVISORY_XACT_LOCK_SHARED", "PG_TRY_ADVISORY_XACT_LOCK", "PG_TRY_ADVISORY_XACT_LOCK_SHARED",
		"PG_ADVISORY_UNLOCK", "PG_ADVISORY_UNLOCK_SHARED", "PG_ADVISORY_UNLOCK_ALL", "BEGIN", "COMMIT", "ROLLBACK", "DISCARD",
		"UPDATE_FENCE", "SELECT_FENCE", "SELECT", "SQL", "PREPARE", "SYNC", "STARTUP", "SSL", "GSS", "CANCEL", "TERMINATE"}
	// MySQLOps are what a MySQL connection carries (sim/mysqlnode's
	// codec): the named-lock functions by name, the statements drivers
	// and pools send, the fence row's write, and the protocol's own steps.
	MySQLOps = []string{"GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS", "IS_USED_LOCK", "IS_FREE_LOCK",
		"SELECT", "UPDATE", "SET", "BEGIN", "COMMIT", "ROLLBACK", "KILL", "PREPARE", "CLOSE", "QUIT", "PING", "USE", "RESET",
		"HANDSHAKE", "LOGIN"}
	// NFSOps are the operations a client sends an NFSv4 server
	// (sim/fsnode, after RFC 7530 §16).
	NFSOps = []string{"SETCLIENTID", "RENEW", "CREATE", "LOOKUP", "LINK", "REMOVE", "GETATTR", "READ", "WRITE", "LOCK", "LOCKU"}
	// ResourceOps are the protected resource's operations.
	ResourceOps = []string{"READ", "WRITE"}
	// InternalOps are messages between servers.
	InternalOps = []string{"REPLICATE"}
)

// KnownOps lists every op, sorted, without duplicates.
func KnownOps() []string {
	all := slices.Concat(RedisOps, ZooKeeperOps, PostgresOps, MySQLOps, NFSOps, ResourceOps, InternalOps)
	slices.Sort(all)
	return slices.Compact(all)
}

// KnownOp reports whether op (in any case, as patterns match) names a
// message some host sends.
func KnownOp(op string) bool { return slices.Contains(KnownOps(), strings.ToUpper(op)) }
