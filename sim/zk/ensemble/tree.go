package ensemble

import (
	"fmt"
	"sort"
	"strings"

	"github.com/locklab/locklab/sim/zk/wire"
)

// tree is one server's copy of the znode tree (ZooKeeper's DataTree). The
// leader prepares every write against its own authoritative copy; each
// server then applies the resulting effects to its copy when the commit
// reaches it, so a lagging follower shows an older tree.
type tree struct {
	nodes      map[string]*znode
	ephemerals map[int64]map[string]bool
	zxid       int64 // last transaction applied
}

// znode keeps its stat as ZooKeeper persists it: Cversion counts the
// children ever created (the next sequential suffix), and deletes leave it
// alone. Clients see stat() instead.
type znode struct {
	data     []byte
	stat     wire.Stat
	children map[string]bool
}

// wireStat is the stat a client is sent: the child version in "v3
// semantics", 2·creates − children, as if every child gone had been
// deleted once (DataNode.copyStat).
func (n *znode) wireStat() wire.Stat {
	st := n.stat
	st.Cversion = st.Cversion*2 - st.NumChildren
	return st
}

func newTree() *tree {
	return &tree{
		nodes:      map[string]*znode{"/": {children: map[string]bool{}}},
		ephemerals: map[int64]map[string]bool{},
	}
}

func (t *tree) clone() *tree {
	c := &tree{nodes: make(map[string]*znode, len(t.nodes)), ephemerals: map[int64]map[string]bool{}, zxid: t.zxid}
	for p, n := range t.nodes {
		ch := make(map[string]bool, len(n.children))
		for k := range n.children {
			ch[k] = true
		}
		c.nodes[p] = &znode{data: n.data, stat: n.stat, children: ch}
	}
	for s, set := range t.ephemerals {
		m := map[string]bool{}
		for k := range set {
			m[k] = true
		}
		c.ephemerals[s] = m
	}
	return c
}

// effect is one change a committed transaction makes: what the leader
// decided, replayed identically on every server.
type effect struct {
	op    int32 // wire.OpCreate, wire.OpDelete or wire.OpSetData
	path  string
	data  []byte
	owner int64 // ephemeral owner for creates
}

// trigger is a watch event a change fires on one server: type and path,
// and whether data watches, child watches or both are consulted.
type trigger struct {
	typ  int32
	path string
}

// result is what the client is told: an error code, the created path, the
// new stat, or one result per op of a multi.
type result struct {
	err   int32
	path  string
	stat  wire.Stat
	multi []result
	op    int32
}

func parentOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "/"
	}
	return path[:i]
}

func baseOf(path string) string { return path[strings.LastIndexByte(path, '/')+1:] }

// validPath follows PathUtils.validatePath: absolute, no empty segment, no
// trailing slash (except "/"), no "." or ".." segments, no NUL.
func validPath(path string, sequential bool) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	if path == "/" {
		return !sequential
	}
	check := path
	if sequential {
		check = path + "1"
	}
	if strings.HasSuffix(check, "/") || strings.Contains(check, "//") || strings.ContainsRune(check, 0) {
		return false
	}
	for _, seg := range strings.Split(check[1:], "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// prepare decides a write the way PrepRequestProcessor does: it checks the
// request against the tree, returns the effects and the client's result,
// and applies the effects to t (the leader's authoritative copy). A failed
// write has no effects but still consumes a zxid, as in ZooKeeper, where it
// is logged as an error transaction.
func (t *tree) prepare(r wire.Request, session int64, zxid, ms int64) ([]effect, result) {
	switch r.Op {
	case wire.OpMulti:
		return t.prepareMulti(r, session, zxid, ms)
	case wire.OpCreate:
		return t.prepareCreate(r, session, zxid, ms)
	case wire.OpDelete:
		return t.prepareDelete(r, zxid, ms)
	case wire.OpSetData:
		return t.prepareSetData(r, zxid, ms)
	case wire.OpCheck:
		if !validPath(r.Path, false) {
			return nil, result{err: wire.ErrBadArguments, op: r.Op}
		}
		_, code := t.versioned(r.Path, r.Version)
		if code != wire.ErrOK {
			return nil, result{err: code, op: r.Op}
		}
		return nil, result{op: r.Op}
	}
	return nil, result{err: wire.ErrUnimplemented, op: r.Op}
}

// prepareMulti prepares a multi's ops in order, all or nothing.
func (t *tree) prepareMulti(r wire.Request, session int64, zxid, ms int64) ([]effect, result) {
	// All or nothing: prepare on a scratch copy; on the first failure
	// earlier ops report OK, the failing one its code and later ones
	// RuntimeInconsistency, and nothing is applied (MultiOperationRecord).
	scratch := t.clone()
	var effs []effect
	res := result{op: wire.OpMulti}
	failed := -1
	for i, sub := range r.Ops {
		e, sr := scratch.prepare(sub, session, zxid, ms)
		if sr.err != wire.ErrOK {
			failed = i
			res.err = sr.err
			break
		}
		effs = append(effs, e...)
		res.multi = append(res.multi, sr)
	}
	if failed >= 0 {
		res.multi = res.multi[:0]
		for i := range r.Ops {
			code := wire.ErrOK
			switch {
			case i == failed:
				code = res.err
			case i > failed:
				code = wire.ErrRuntimeInconsistency
			}
			res.multi = append(res.multi, result{op: wire.OpError, err: code})
		}
		return nil, res
	}
	for _, e := range effs {
		t.apply(e, zxid, ms)
	}
	return effs, res
}

// prepareCreate prepares a create: a valid path under an existing,
// persistent parent, with the sequential suffix when asked for.
func (t *tree) prepareCreate(r wire.Request, session int64, zxid, ms int64) ([]effect, result) {
	seq := r.Flags&wire.FlagSequence != 0
	if r.Flags < 0 || r.Flags > 3 || !validPath(r.Path, seq) {
		return nil, result{err: wire.ErrBadArguments, op: r.Op}
	}
	if len(r.ACL) == 0 {
		return nil, result{err: wire.ErrInvalidACL, op: r.Op}
	}
	parentPath := parentOf(r.Path)
	parent := t.nodes[parentPath]
	if parent == nil {
		return nil, result{err: wire.ErrNoNode, op: r.Op}
	}
	if parent.stat.EphemeralOwner != 0 {
		return nil, result{err: wire.ErrNoChildrenForEphemerals, op: r.Op}
	}
	path := r.Path
	if seq {
		// The suffix is the parent's child version before this create,
		// ten digits, zero-padded (PrepRequestProcessor).
		path = fmt.Sprintf("%s%010d", r.Path, parent.stat.Cversion)
	}
	if t.nodes[path] != nil {
		return nil, result{err: wire.ErrNodeExists, op: r.Op}
	}
	var owner int64
	if r.Flags&wire.FlagEphemeral != 0 {
		owner = session
	}
	e := effect{op: wire.OpCreate, path: path, data: r.Data, owner: owner}
	t.apply(e, zxid, ms)
	return []effect{e}, result{path: path, op: r.Op}
}

// prepareDelete prepares a delete of a childless node at the expected
// version.
func (t *tree) prepareDelete(r wire.Request, zxid, ms int64) ([]effect, result) {
	if !validPath(r.Path, false) || r.Path == "/" {
		return nil, result{err: wire.ErrBadArguments, op: r.Op}
	}
	if t.nodes[parentOf(r.Path)] == nil {
		return nil, result{err: wire.ErrNoNode, op: r.Op}
	}
	n, code := t.versioned(r.Path, r.Version)
	if code != wire.ErrOK {
		return nil, result{err: code, op: r.Op}
	}
	if len(n.children) > 0 {
		return nil, result{err: wire.ErrNotEmpty, op: r.Op}
	}
	e := effect{op: wire.OpDelete, path: r.Path}
	t.apply(e, zxid, ms)
	return []effect{e}, result{op: r.Op}
}

// prepareSetData prepares a setData at the expected version.
func (t *tree) prepareSetData(r wire.Request, zxid, ms int64) ([]effect, result) {
	if !validPath(r.Path, false) {
		return nil, result{err: wire.ErrBadArguments, op: r.Op}
	}
	_, code := t.versioned(r.Path, r.Version)
	if code != wire.ErrOK {
		return nil, result{err: code, op: r.Op}
	}
	e := effect{op: wire.OpSetData, path: r.Path, data: r.Data}
	t.apply(e, zxid, ms)
	return []effect{e}, result{stat: t.nodes[r.Path].wireStat(), op: r.Op}
}

// closeSession is the effects of a closeSession transaction: the session's
// ephemeral nodes deleted, deepest and then alphabetically last first so
// the order never depends on a map.
func (t *tree) closeSession(session int64, zxid, ms int64) []effect {
	var paths []string
	for p := range t.ephemerals[session] {
		paths = append(paths, p)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	var effs []effect
	for _, p := range paths {
		e := effect{op: wire.OpDelete, path: p}
		t.apply(e, zxid, ms)
		effs = append(effs, e)
	}
	return effs
}

// apply makes one effect on the tree and returns the watch triggers it
// fires (DataTree.createNode, deleteNode, setData).
func (t *tree) apply(e effect, zxid, ms int64) []trigger {
	if zxid > t.zxid {
		t.zxid = zxid
	}
	parentPath := parentOf(e.path)
	switch e.op {
	case wire.OpCreate:
		parent := t.nodes[parentPath]
		if parent == nil || t.nodes[e.path] != nil {
			return nil // cannot happen for an effect the leader prepared
		}
		t.nodes[e.path] = &znode{
			data:     e.data,
			children: map[string]bool{},
			stat: wire.Stat{Czxid: zxid, Mzxid: zxid, Pzxid: zxid, Ctime: ms, Mtime: ms,
				EphemeralOwner: e.owner, DataLength: int32(len(e.data))},
		}
		parent.children[baseOf(e.path)] = true
		parent.stat.Cversion++
		parent.stat.Pzxid = zxid
		parent.stat.NumChildren = int32(len(parent.children))
		if e.owner != 0 {
			if t.ephemerals[e.owner] == nil {
				t.ephemerals[e.owner] = map[string]bool{}
			}
			t.ephemerals[e.owner][e.path] = true
		}
		return []trigger{{wire.EventNodeCreated, e.path}, {wire.EventNodeChildrenChanged, parentPath}}
	case wire.OpDelete:
		n := t.nodes[e.path]
		if n == nil {
			return nil
		}
		delete(t.nodes, e.path)
		if n.stat.EphemeralOwner != 0 {
			delete(t.ephemerals[n.stat.EphemeralOwner], e.path)
			if len(t.ephemerals[n.stat.EphemeralOwner]) == 0 {
				delete(t.ephemerals, n.stat.EphemeralOwner)
			}
		}
		if parent := t.nodes[parentPath]; parent != nil {
			delete(parent.children, baseOf(e.path))
			// DataTree.deleteNode: the pzxid moves, the persisted child
			// version does not.
			if zxid > parent.stat.Pzxid {
				parent.stat.Pzxid = zxid
			}
			parent.stat.NumChildren = int32(len(parent.children))
		}
		return []trigger{{wire.EventNodeDeleted, e.path}, {wire.EventNodeChildrenChanged, parentPath}}
	case wire.OpSetData:
		n := t.nodes[e.path]
		if n == nil {
			return nil
		}
		n.data = e.data
		n.stat.Version++
		n.stat.Mzxid = zxid
		n.stat.Mtime = ms
		n.stat.DataLength = int32(len(e.data))
		return []trigger{{wire.EventNodeDataChanged, e.path}}
	}
	return nil
}

// children lists a node's children in sorted order. ZooKeeper returns
// them in hash-set order; clients must not depend on it, and a sorted list
// keeps runs reproducible.
func (t *tree) children(path string) []string {
	n := t.nodes[path]
	if n == nil {
		return nil
	}
	out := make([]string, 0, len(n.children))
	for c := range n.children {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Dump lists every znode as "path data=... version=... cversion=...
// ephemeral=yes/no", sorted: what the differential tests compare.
func (t *tree) dump(under string) []string {
	var paths []string
	for p := range t.nodes {
		if p == under || strings.HasPrefix(p, under+"/") {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		n := t.nodes[p]
		out = append(out, fmt.Sprintf("%s data=%q version=%d cversion=%d children=%d ephemeral=%v",
			p, n.data, n.stat.Version, n.wireStat().Cversion, n.stat.NumChildren, n.stat.EphemeralOwner != 0))
	}
	return out
}

// versioned finds the node a versioned request (delete, setData, check)
// names: NONODE when it is not there, BADVERSION when the request expects
// another version (-1 matches any), in the order ZooKeeper's
// PrepRequestProcessor checks them.
func (t *tree) versioned(path string, version int32) (*znode, int32) {
	n := t.nodes[path]
	if n == nil {
		return nil, wire.ErrNoNode
	}
	if version != -1 && version != n.stat.Version {
		return nil, wire.ErrBadVersion
	}
	return n, wire.ErrOK
}
