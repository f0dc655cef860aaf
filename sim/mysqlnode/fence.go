package mysqlnode

import "sync"

// FenceRow is the table fence's one row (id 1, version, value): the
// fencing row. A server keeps its own unless its Config shares one: the
// nodes of a multi-primary cluster (Galera) share theirs, because a row
// is part of the replicated write set. Galera certifies every write set
// in one total order on every node, and of two conflicting transactions
// the first to commit wins and the other aborts, so a conditional
// UPDATE ... WHERE version = ? issued on any node sees every write
// committed before it on any node (first committer wins): the row
// behaves as one row. Named locks (GET_LOCK) are not replicated and stay
// per node (userlock.go). Links between the nodes are not modelled, so a
// partition between them does not split the row (real Galera would take
// the minority node out of service instead).
type FenceRow struct {
	mu      sync.Mutex
	version int64 // bumped by each accepted write
	value   int64
}

// Get returns the row's version and value.
func (f *FenceRow) Get() (version, value int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, f.value
}

// Set sets the row.
func (f *FenceRow) Set(version, value int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version, f.value = version, value
}

// update is the conditional write: when expect is nil or the version is
// still *expect, the version goes up by one and the value, if given, is
// set; it reports whether the row was changed.
func (f *FenceRow) update(expect, value *int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if expect != nil && *expect != f.version {
		return false
	}
	f.version++
	if value != nil {
		f.value = *value
	}
	return true
}
