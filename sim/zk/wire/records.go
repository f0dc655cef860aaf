package wire

import "fmt"

// Operation codes (ZooDefs.OpCode).
const (
	OpNotify       int32 = 0
	OpCreate       int32 = 1
	OpDelete       int32 = 2
	OpExists       int32 = 3
	OpGetData      int32 = 4
	OpSetData      int32 = 5
	OpGetACL       int32 = 6
	OpSetACL       int32 = 7
	OpGetChildren  int32 = 8
	OpSync         int32 = 9
	OpPing         int32 = 11
	OpGetChildren2 int32 = 12
	OpCheck        int32 = 13
	OpMulti        int32 = 14
	OpClose        int32 = -11
	OpSetAuth      int32 = 100
	OpSetWatches   int32 = 101
	OpError        int32 = -1
)

// Special xids: notifications and ping replies.
const (
	XidNotification int32 = -1
	XidPing         int32 = -2
)

// Error codes (KeeperException.Code).
const (
	ErrOK                      int32 = 0
	ErrSystemError             int32 = -1
	ErrRuntimeInconsistency    int32 = -2
	ErrConnectionLoss          int32 = -4
	ErrMarshallingError        int32 = -5
	ErrUnimplemented           int32 = -6
	ErrBadArguments            int32 = -8
	ErrNoNode                  int32 = -101
	ErrBadVersion              int32 = -103
	ErrNoChildrenForEphemerals int32 = -108
	ErrNodeExists              int32 = -110
	ErrNotEmpty                int32 = -111
	ErrSessionExpired          int32 = -112
	ErrInvalidACL              int32 = -114
	ErrSessionMoved            int32 = -118
)

// Watch event types and the SyncConnected state notifications carry.
const (
	EventNodeCreated         int32 = 1
	EventNodeDeleted         int32 = 2
	EventNodeDataChanged     int32 = 3
	EventNodeChildrenChanged int32 = 4
	StateSyncConnected       int32 = 3
)

// Create modes ZooKeeper 3.8 accepts on OpCreate. Container and TTL modes
// have their own op codes and are not modelled.
const (
	FlagEphemeral int32 = 1
	FlagSequence  int32 = 2
)

// Stat is data.Stat.
type Stat struct {
	Czxid, Mzxid, Ctime, Mtime  int64
	Version, Cversion, Aversion int32
	EphemeralOwner              int64
	DataLength, NumChildren     int32
	Pzxid                       int64
}

// ACL is data.ACL (perms, Id{scheme, id}).
type ACL struct {
	Perms      int32
	Scheme, ID string
}

// ConnectRequest opens or resumes a session. ReadOnly is sent by the Java
// client only; go-zookeeper ends the record after Passwd.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	Timeout         int32
	SessionID       int64
	Passwd          []byte
}

// DecodeConnect reads a ConnectRequest frame body.
func DecodeConnect(body []byte) (ConnectRequest, error) {
	d := NewDecoder(body)
	r := ConnectRequest{
		ProtocolVersion: d.Int(), LastZxidSeen: d.Long(), Timeout: d.Int(),
		SessionID: d.Long(), Passwd: d.Buffer(),
	}
	return r, d.Err()
}

// ConnectResponse is the server's answer: a session id of 0 means the
// session asked for has expired (or its password was wrong).
type ConnectResponse struct {
	ProtocolVersion int32
	Timeout         int32
	SessionID       int64
	Passwd          []byte
}

// Frame encodes the response as the Java server does, readOnly flag
// included.
func (r ConnectResponse) Frame() []byte {
	var e Encoder
	e.Int(r.ProtocolVersion)
	e.Int(r.Timeout)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	e.Bool(false)
	return e.Frame()
}

// Request is any request after the handshake. Which fields are set depends
// on Op: Path for all path operations; Data, ACL and Flags for create; Data
// and Version for setData; Version for delete and check; Watch for exists,
// getData and getChildren(2); the three watch lists and RelativeZxid for
// setWatches; Ops for multi.
type Request struct {
	Xid     int32
	Op      int32
	Path    string
	Data    []byte
	ACL     []ACL
	Flags   int32
	Version int32
	Watch   bool

	RelativeZxid                            int64
	DataWatches, ExistWatches, ChildWatches []string

	Ops []Request
}

// IsWrite reports whether the op changes the tree (and so goes through
// the leader as a transaction).
func (r Request) IsWrite() bool {
	switch r.Op {
	case OpCreate, OpDelete, OpSetData, OpMulti, OpCheck, OpClose:
		return true
	}
	return false
}

// DecodeRequest reads a frame body: a RequestHeader and the op's record.
func DecodeRequest(body []byte) (Request, error) {
	d := NewDecoder(body)
	r := Request{Xid: d.Int(), Op: d.Int()}
	if d.Err() != nil {
		return r, d.Err()
	}
	if err := decodeOp(d, &r); err != nil {
		return r, err
	}
	return r, d.Err()
}

func decodeOp(d *Decoder, r *Request) error {
	switch r.Op {
	case OpPing, OpClose:
	case OpCreate:
		r.Path, r.Data = d.String(), d.Buffer()
		n := d.Int()
		if n < 0 || int(n) > d.Rest()/12 {
			if n > 0 {
				return ErrShort
			}
			n = 0
		}
		for i := int32(0); i < n; i++ {
			r.ACL = append(r.ACL, ACL{Perms: d.Int(), Scheme: d.String(), ID: d.String()})
		}
		r.Flags = d.Int()
	case OpDelete, OpCheck:
		r.Path, r.Version = d.String(), d.Int()
	case OpExists, OpGetData, OpGetChildren, OpGetChildren2:
		r.Path, r.Watch = d.String(), d.Bool()
	case OpSetData:
		r.Path, r.Data, r.Version = d.String(), d.Buffer(), d.Int()
	case OpSync:
		r.Path = d.String()
	case OpSetWatches:
		r.RelativeZxid = d.Long()
		r.DataWatches, r.ExistWatches, r.ChildWatches = d.Strings(), d.Strings(), d.Strings()
	case OpMulti:
		// A sequence of MultiHeader{type, done, err} + op record, ended by
		// a header whose done flag is set.
		for {
			typ, done, _ := d.Int(), d.Bool(), d.Int()
			if d.Err() != nil {
				return d.Err()
			}
			if done {
				break
			}
			sub := Request{Op: typ}
			switch typ {
			case OpCreate, OpDelete, OpSetData, OpCheck:
			default:
				return fmt.Errorf("zk wire: op %d inside multi", typ)
			}
			if err := decodeOp(d, &sub); err != nil {
				return err
			}
			r.Ops = append(r.Ops, sub)
		}
	default:
		return fmt.Errorf("zk wire: unsupported op %d", r.Op)
	}
	return d.Err()
}

// ReplyHeader starts every server frame after the handshake.
func ReplyHeader(xid int32, zxid int64, err int32) *Encoder {
	e := &Encoder{}
	e.Int(xid)
	e.Long(zxid)
	e.Int(err)
	return e
}

// Notification is a WatcherEvent frame.
func Notification(zxid int64, typ int32, path string) []byte {
	e := ReplyHeader(XidNotification, zxid, ErrOK)
	e.Int(typ)
	e.Int(StateSyncConnected)
	e.String(path)
	return e.Frame()
}
