package zk

import "testing"

// A child list costs the work budget what it carries on the wire: the
// 1000-client zk-queue sweep input, whose every waiter lists a thousand
// children, ran for minutes within a budget that counted only events.
func TestReplyWireSizeGrowsWithTheChildren(t *testing.T) {
	small := reply{val: createResult{path: "/locks/lock-0000000001"}}.WireSize()
	list := reply{val: childrenResult{children: []string{"lock-0000000001", "lock-0000000002"}}}.WireSize()
	if small != 16 || list != 16+2*(4+15) {
		t.Fatalf("sizes %d and %d", small, list)
	}
}
