package sim

// Where miniredis's replies differ from a real redis-server 7 in ways a
// lock can observe, this file brings them in line. Every rewrite here was
// found by the differential tests (sim/differential), which compare the
// simulated node with a real server command by command; each carries the
// real server's text it reproduces.

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"

	"github.com/alicebob/miniredis/v2/server"
)

// dispatchCompat is Dispatch for a client's command, with the request and
// the reply brought in line with Redis 7 where miniredis differs. Exec uses
// it for every command that does not take the script fast path.
func (n *RedisNode) dispatchCompat(peer *server.Peer, args []string) []byte {
	// Redis looks a script up by its SHA1 in any letter case
	// (evalGenericCommand lower-cases it); miniredis only in lower case.
	if n.hooked != n.mr {
		// Once per miniredis instance (a restart makes a new one): the
		// hook is a closure, and setting it takes the server's lock.
		n.mr.Server().SetPreHook(commandCompat(n.mr.Server()))
		n.hooked = n.mr
	}
	if len(args) >= 2 && strings.EqualFold(args[0], "EVALSHA") && args[1] != strings.ToLower(args[1]) {
		args = append([]string{args[0], strings.ToLower(args[1])}, args[2:]...)
	}
	reply := n.Dispatch(peer, args)
	// Redis caches a script as soon as EVAL has compiled it, so EVALSHA
	// finds it even when its first run failed; miniredis caches only
	// after a run without error. A runtime error (not a syntax error) is
	// the case miniredis reports with an empty chunk name, ": :<line>:".
	if len(args) >= 2 && strings.EqualFold(args[0], "EVAL") && bytes.HasPrefix(reply, []byte(miniredisScriptErr)) {
		n.Dispatch(peer, []string{"SCRIPT", "LOAD", args[1]})
	}
	return redisCompat(args, reply)
}

// redisCompat rewrites the reply miniredis gave to args, where it differs
// from Redis 7's.
func redisCompat(args []string, reply []byte) []byte {
	if len(args) >= 2 && len(reply) > 0 && reply[0] == '-' {
		switch strings.ToUpper(args[0]) {
		case "EVAL", "EVALSHA":
			return scriptCallError(args, reply)
		}
	}
	return reply
}

// miniredis wraps an error raised by redis.call inside a script as a
// compile error with a Lua stack trace:
//
//	-ERR Error compiling script (new function): :1: WRONGTYPE Operation against a key holding the wrong kind of value stack traceback: ...
//
// Redis 7 (script_lua.c, luaError handling of redis.call) passes the
// command's own error through, error code first, and names the script and
// the line:
//
//	-WRONGTYPE Operation against a key holding the wrong kind of value script: <sha1>, on @user_script:1.
//
// The code matters to a client: go-redis and lock libraries tell a
// WRONGTYPE or NOSCRIPT error from a generic ERR by its first word.
const miniredisScriptErr = "-ERR Error compiling script (new function): :"

func scriptCallError(args []string, reply []byte) []byte {
	rest, ok := bytes.CutPrefix(reply, []byte(miniredisScriptErr))
	if !ok {
		return reply
	}
	colon := bytes.IndexByte(rest, ':')
	if colon <= 0 || !allDigits(rest[:colon]) {
		return reply
	}
	line := string(rest[:colon])
	msg := bytes.TrimPrefix(rest[colon+1:], []byte(" "))
	msg, _, _ = bytes.Cut(msg, []byte(" stack traceback:"))
	msg = bytes.TrimRight(msg, "\r\n")
	// Only errors replied by a Redis command start with an error code (an
	// upper-case word); a Lua runtime error ("attempt to compare ...") has
	// another form in Redis 7 and is left as miniredis words it.
	code, _, _ := bytes.Cut(msg, []byte(" "))
	if len(code) == 0 || !bytes.Equal(code, bytes.ToUpper(code)) || !isLetters(code) {
		return reply
	}
	sha := strings.ToLower(args[1])
	if strings.ToUpper(args[0]) == "EVAL" {
		sum := sha1.Sum([]byte(args[1]))
		sha = hex.EncodeToString(sum[:])
	}
	var b bytes.Buffer
	b.WriteByte('-')
	b.Write(msg)
	b.WriteString(" script: " + sha + ", on @user_script:" + line + ".\r\n")
	return b.Bytes()
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

func isLetters(b []byte) bool {
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// commandCompat is a miniredis pre-hook: it sees every command, those a
// client sends and those a script sends with redis.call, and answers the few
// whose reply miniredis words differently from Redis 7 (returning true),
// leaving the rest to miniredis (false). It is (re)installed before each
// command, so a node restarted with a fresh miniredis has it too.
func commandCompat(srv *server.Server) server.Hook {
	return func(c *server.Peer, cmd string, args ...string) bool {
		if cmd != "HINCRBY" || len(args) != 3 || inTransaction(c) {
			return false
		}
		// HINCRBY on a field that holds no integer: Redis 7 (hincrbyCommand,
		// hashTypeGetValue) replies "ERR hash value is not an integer";
		// miniredis replies the generic "value is not an integer or out of
		// range", which Redis keeps for a bad increment.
		if _, err := strconv.ParseInt(args[2], 10, 64); err != nil {
			return false
		}
		v := sameConnection(srv, c, "HGET", args[0], args[1])
		if len(v) == 0 || v[0] != '$' || bytes.HasPrefix(v, []byte("$-1")) {
			return false // no such field, or not a hash: miniredis is right
		}
		_, body, _ := bytes.Cut(v, []byte("\r\n"))
		if _, err := strconv.ParseInt(string(bytes.TrimSuffix(body, []byte("\r\n"))), 10, 64); err == nil {
			return false
		}
		c.WriteError("ERR hash value is not an integer")
		return true
	}
}

// sameConnection runs a read on behalf of c (same database, and inside a
// script the same nesting miniredis's Lua uses, so no lock is taken twice)
// and returns its RESP reply.
func sameConnection(srv *server.Server, c *server.Peer, args ...string) []byte {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	p := server.NewPeer(w)
	p.Ctx = c.Ctx
	srv.Dispatch(p, args)
	w.Flush()
	return buf.Bytes()
}

// inTransaction reports whether c is inside MULTI, where miniredis queues a
// command instead of running it; the hook then leaves it alone (and a queued
// HINCRBY keeps miniredis's wording).
func inTransaction(c *server.Peer) bool {
	if c.Ctx == nil {
		return false
	}
	v := reflect.ValueOf(c.Ctx)
	l, ok := connLayoutOf(v.Type())
	if !ok {
		return true // unknown layout: do not guess
	}
	return !v.Elem().FieldByIndex(l.transaction).IsNil()
}
