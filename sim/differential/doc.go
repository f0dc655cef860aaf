// Package differential holds the differential tests that prove the
// simulated Redis node (package sim) behaves as a real redis-server 7: the
// same random command sequences, drawn by rapid from the vocabulary of the
// lock algorithms, run through go-redis against both, and every reply and the
// final dataset must agree. The package has no code of its own; the tests
// are in its _test.go files and start their servers with sim/internal/realredis.
//
// # Time
//
// A real server's clock cannot be moved, so both sides run on a grid of
// phases, 20 ms apart on a machine that keeps time. Inside a phase the
// simulated node's clock stands still, and the real commands must all
// return within the first half of the phase (less 2 ms); an "advance" step
// waits for a later phase (the real test sleeps until that instant, the
// simulated client sleeps the same virtual time). Expiry times that can
// fall due during a run are written in phases, (k+½) of them, and sent in
// milliseconds on the run's grid, so a key expires between two phases on
// both sides, never during one; every other expiry is at least 100 s. PTTL
// (and a script returning one) is compared within half a phase; every
// other reply exactly.
//
// Everything else is ordered by what the real servers say, not by time: a
// read on the replica waits for WAIT 1 to count it, a stopped replica is
// SIGSTOPped and SIGCONTed, a promotion is REPLICAOF NO ONE's reply.
//
// When the machine is too loaded for a command to return inside its
// phase's window, the real run says nothing about Redis: it is repeated,
// on the base grid once and then on grids twice, four times, … 128 times
// as coarse (2.56 s), and the simulated side follows the grid and phases
// of the run that kept time. Every sequence is judged, none is skipped, so
// no verdict depends on the machine's speed; the only assumption left is
// that a command on loopback returns within 1.28 s, 160 times what an idle
// machine needs. The test logs how many sequences needed a coarser grid.
//
// # What is compared
//
//   - TestDifferentialSingleNode: SET (NX/XX, PX/EX, GET), GET, DEL, EXISTS,
//     PEXPIRE, PTTL, INCR, HSET/HINCRBY/HGET/HDEL, EVAL and EVALSHA of every
//     lock script of package algorithms, SCRIPT LOAD and WAIT 0, with expiry.
//   - TestDifferentialReplication: the same against a master with one
//     replica (real REPLICAOF against sim's replication stream); reads on
//     the replica once it acknowledged the master's writes (WAIT 1), a
//     replica stopped (SIGSTOP; in the simulation its stream is held back)
//     while the master writes and then resumed, and a promotion (REPLICAOF
//     NO ONE against RedisNode.Promote) followed by more commands.
//   - TestDifferentialPersistence: appendonly yes, appendfsync always, kill
//     -9 and restart from the AOF against RedisNode.Crash and
//     Restart("always").
//   - TestDifferentialExamples: fixed sequences whose replies, on both
//     sides, must be the values Redis documents.
//   - TestDifferentialWaitWithoutReplica, TestDifferentialWaitLaggingReplica and
//     TestDifferentialMinReplicasRefusalAfterMaxLag: WAIT blocking until its
//     timeout under go-redis's own deadline for it, and a master with
//     min-replicas-to-write 1 accepting writes until its stopped replica's
//     last ACK is older than min-replicas-max-lag.
//   - TestDifferentialFailoverClientSwitch: go-redis's failover client
//     across a failover voted by three real Sentinels
//     (realredis.StartSentinels): the idle connection to the old master is
//     dropped and the next command goes to the new master; a command
//     waiting on the old master fails at the switch.
//
// A difference is shrunk by rapid and printed as the command list to paste
// into redis-cli. At least 1,000 sequences run per property (TestMain sets
// -rapid.checks=1000 unless the flag is given).
package differential
