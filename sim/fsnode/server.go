package fsnode

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Ops of the NFSv4-style protocol, the Op of each simulated message.
const (
	OpSetClientID = "SETCLIENTID"
	OpRenew       = "RENEW"
	OpCreate      = "CREATE"
	OpLookup      = "LOOKUP"
	OpLink        = "LINK"
	OpRemove      = "REMOVE"
	OpGetattr     = "GETATTR"
	OpRead        = "READ"
	OpWrite       = "WRITE"
	OpLock        = "LOCK"
	OpLocku       = "LOCKU"
)

// Request is one NFS call: the client it comes from, the client ID epoch
// it established (SETCLIENTID), its transaction id (XID: a retransmission
// carries the same one) and the operation's arguments.
type Request struct {
	Client  string
	Epoch   int
	XID     uint64
	Op      string
	Name    string
	Name2   string // LINK's new name
	Excl    bool   // CREATE: GUARDED4
	Ino     uint64
	Data    []byte
	Lock    Lock
	Reclaim bool // LOCK: reclaim after a restart (RFC 7530 §9.6.2)
}

// Summary is the request as a trace shows it.
func (r Request) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Op)
	switch r.Op {
	case OpCreate:
		fmt.Fprintf(&b, " %s", r.Name)
		if r.Excl {
			b.WriteString(" GUARDED")
		}
	case OpLookup, OpRemove, OpGetattr:
		fmt.Fprintf(&b, " %s", r.Name)
	case OpLink:
		fmt.Fprintf(&b, " %s %s", r.Name, r.Name2)
	case OpRead:
		fmt.Fprintf(&b, " %s", Name(r.Ino))
	case OpWrite:
		fmt.Fprintf(&b, " %s %q", Name(r.Ino), r.Data)
	case OpLock, OpLocku:
		fmt.Fprintf(&b, " %s owner=%s", Name(r.Ino), r.Lock.Owner)
		if r.Reclaim {
			b.WriteString(" reclaim")
		}
	}
	fmt.Fprintf(&b, " xid=%d", r.XID)
	return b.String()
}

// Reply is the server's answer.
type Reply struct {
	Err   error
	Ino   uint64
	Stat  Stat
	Data  []byte
	Epoch int
	// Replayed marks a reply the duplicate-request cache returned.
	Replayed bool
}

// Summary is the reply as a trace shows it.
func (r Reply) Summary() string {
	s := "OK"
	if r.Err != nil {
		s = strings.SplitN(r.Err.Error(), ":", 2)[0]
	}
	if r.Replayed {
		s += " (replayed from the duplicate-request cache)"
	}
	return s
}

// ServerEvent is what the server tells its host about, as data: a client's
// lease ran out and its locks went (Client, Count), or a restart began a
// grace period.
type ServerEvent struct {
	Kind   string // "lease-expired"
	Client string
	Count  int
}

// Server is an NFSv4 server's state around the exported files: client
// leases, the grace period and the duplicate-request cache.
type Server struct {
	FS *FS
	// Lease is the lease time (RFC 7530 §9.6: the server's lease_time,
	// 90 s on Linux); Grace the grace period after a restart (Linux: the
	// lease time).
	Lease, Grace time.Duration
	// DRC turns the duplicate-request cache on: a retransmitted
	// non-idempotent request (same client and XID) gets the reply of the
	// first execution instead of running again (RFC 8881 §2.10.6, and
	// the best-effort cache of NFSv3/4.0 servers).
	DRC bool
	// OnEvent, when set, is told about lease expiries.
	OnEvent func(ServerEvent)

	epoch      int
	leases     map[string]time.Duration // client → the instant its lease ends
	expired    map[string]bool          // clients whose state the server dropped
	graceUntil time.Duration
	cache      map[string]Reply
}

// NewServer serves fs.
func NewServer(fs *FS, lease, grace time.Duration, drc bool) *Server {
	return &Server{FS: fs, Lease: lease, Grace: grace, DRC: drc, epoch: 1,
		leases: map[string]time.Duration{}, expired: map[string]bool{}, cache: map[string]Reply{}}
}

// Epoch is the server's current boot: a client ID from another is stale.
func (s *Server) Epoch() int { return s.epoch }

// Restart is the server coming back after a crash: the files are on disk,
// the lock state was in memory. RFC 7530 §9.6.2: the server loses its
// lock state, refuses stale client IDs, and for the grace period accepts
// only reclaims of locks clients held.
func (s *Server) Restart(now time.Duration) {
	s.epoch++
	s.FS.DropOwners(func(string) bool { return true })
	s.leases = map[string]time.Duration{}
	s.expired = map[string]bool{}
	s.cache = map[string]Reply{}
	s.graceUntil = now + s.Grace
}

// InGrace reports whether the grace period runs at now.
func (s *Server) InGrace(now time.Duration) bool { return now < s.graceUntil }

// expire drops the state of every client whose lease ended by now, in
// client order. RFC 7530 §9.6.3 ("Network Partitions and Recovery"):
// once the lease has expired the server may release the client's locks,
// which Linux's nfsd does. Expiry is judged when a request arrives: a
// lease nobody asks about changes nothing anyone sees.
func (s *Server) expire(now time.Duration) {
	var gone []string
	for c, until := range s.leases {
		if until <= now {
			gone = append(gone, c)
		}
	}
	slices.Sort(gone)
	for _, c := range gone {
		delete(s.leases, c)
		s.expired[c] = true
		n := s.FS.DropOwners(func(o string) bool { return strings.HasPrefix(o, c+"/") })
		if s.OnEvent != nil {
			s.OnEvent(ServerEvent{Kind: "lease-expired", Client: c, Count: n})
		}
	}
}

// Handle runs one request that arrived at now.
func (s *Server) Handle(now time.Duration, r Request) Reply {
	s.expire(now)
	if r.Op == OpSetClientID {
		s.leases[r.Client] = now + s.Lease
		delete(s.expired, r.Client)
		return Reply{Epoch: s.epoch}
	}
	if r.Epoch != s.epoch {
		return Reply{Err: ErrStaleClientID}
	}
	if s.expired[r.Client] {
		return Reply{Err: ErrExpired}
	}
	key := fmt.Sprintf("%s/%d", r.Client, r.XID)
	if s.DRC {
		if rep, ok := s.cache[key]; ok {
			rep.Replayed = true
			return rep
		}
	}
	// RFC 7530 §9.6: any request of the client renews its lease.
	s.leases[r.Client] = now + s.Lease
	rep := s.run(now, r)
	switch r.Op {
	case OpCreate, OpLink, OpRemove, OpWrite, OpLock, OpLocku:
		s.cache[key] = rep
	}
	return rep
}

func (s *Server) run(now time.Duration, r Request) Reply {
	fs := s.FS
	switch r.Op {
	case OpRenew:
		return Reply{}
	case OpCreate:
		if s.InGrace(now) {
			// Linux's nfsd refuses non-reclaim OPENs in the grace period.
			return Reply{Err: ErrGrace}
		}
		ino, err := fs.Create(r.Name, r.Excl)
		return Reply{Ino: ino, Err: err}
	case OpLookup:
		ino, err := fs.Lookup(r.Name)
		return Reply{Ino: ino, Err: err}
	case OpLink:
		return Reply{Err: fs.Link(r.Name, r.Name2)}
	case OpRemove:
		return Reply{Err: fs.Unlink(r.Name)}
	case OpGetattr:
		st, err := fs.Stat(r.Name)
		return Reply{Stat: st, Err: err}
	case OpRead:
		d, err := fs.Read(r.Ino)
		return Reply{Data: d, Err: err}
	case OpWrite:
		return Reply{Err: fs.Write(r.Ino, r.Data)}
	case OpLock:
		switch {
		case r.Reclaim && !s.InGrace(now):
			return Reply{Err: ErrNoGrace}
		case !r.Reclaim && s.InGrace(now):
			return Reply{Err: ErrGrace}
		}
		return Reply{Err: fs.SetLock(r.Lock)}
	case OpLocku:
		fs.Unlock(r.Lock.Ino, r.Lock.Kind, r.Lock.Owner)
		return Reply{}
	}
	return Reply{Err: fmt.Errorf("unknown op %s", r.Op)}
}
