package scenarios

// MadeFor is what a locktest failfile was recorded for. Package locktest
// writes it and checks it before a replay (locktest/madefor.go): a
// counterexample replayed into another test, fault class or kind of lock
// would judge a run that test never makes (issue 31, item 3).
type MadeFor struct {
	// Test is the go test name of the test that called Run, subtests
	// included, without the class ("TestLibraryTable/redislock").
	Test string `yaml:"test" json:"test"`
	// Class is the fault class whose runs found it ("pause", "stall").
	Class string `yaml:"class" json:"class"`
	// Lock describes the lock under test: its backend and primitive
	// ("mutex on redis", "semaphore of 2 permits on redis",
	// "reader-writer lock on zookeeper"). locktest derives it from the
	// scenario's algorithm, permits and modes, and compares what it
	// derives, so this line is for the reader.
	Lock string `yaml:"lock" json:"lock"`
}
