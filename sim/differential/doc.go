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
// phases Grid (20 ms) apart. Inside a phase the simulated node's clock stands
// still, and the real commands must all return within 8 ms of the phase's
// start; an "advance" step waits for a later phase (the real test sleeps
// until that instant, the simulated client sleeps the same virtual time).
// Expiry times that can fall due during a run are drawn as (k+½)·Grid, so a
// key expires between two phases on both sides, never during one; every
// other expiry is at least 100 s. PTTL (and a script returning one) is
// compared within 10 ms; every other reply exactly. When the machine is too
// loaded to keep a phase inside its window the real run is repeated (the
// simulated one is deterministic, and follows the phases the real run
// used), and a sequence that never keeps time is skipped and counted, never
// judged: no verdict depends on the machine's speed.
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
//
// A difference is shrunk by rapid and printed as the command list to paste
// into redis-cli. At least 1,000 sequences run per property (TestMain sets
// -rapid.checks=1000 unless the flag is given).
package differential
