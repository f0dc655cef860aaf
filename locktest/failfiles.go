package locktest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/scenarios"
)

// Failfiles are kept as rapid and go fuzz keep theirs: a new
// counterexample is added beside the old ones, never in their place, and
// every saved one is replayed before exploring (issue 31, item 5: a
// -locktest.seed run replaced four of five saved counterexamples). A
// class's first counterexample is <class>.yaml, the name the README's
// library table links to; later ones are <class>-<digest>.yaml, named by
// the first bytes of their content's SHA-256, so finding the same
// counterexample again writes nothing new.

var errNoReplay = errors.New("locktest: -locktest.replay")

// failDir is the folder of a test's failfiles: testdata/locktest/ and a
// folder per test (and parent subtest). t is the class's subtest.
func failDir(t *testing.T) string {
	parts := strings.Split(t.Name(), "/")
	return filepath.Join(append([]string{"testdata", "locktest"}, parts[:len(parts)-1]...)...)
}

// failfile is where a class's first counterexample is kept.
func failfile(t *testing.T, class Class) string {
	return filepath.Join(failDir(t), string(class)+".yaml")
}

// savedFailfiles are the class's saved counterexamples in the order they
// are replayed: <class>.yaml, then the others by name.
func savedFailfiles(t *testing.T, class Class) []string {
	var saved []string
	if _, err := os.Stat(failfile(t, class)); err == nil {
		saved = append(saved, failfile(t, class))
	}
	more, _ := filepath.Glob(filepath.Join(failDir(t), string(class)+"-*.yaml"))
	slices.Sort(more)
	return append(saved, more...)
}

// saveFailfile keeps sc beside the class's earlier counterexamples and
// returns its path ("" when it could not be written) and, when earlier
// ones exist, a note saying that they were kept.
func saveFailfile(t *testing.T, class Class, sc *scenarios.Scenario) (file, note string) {
	data, err := sc.Marshal()
	if err != nil {
		return "", ""
	}
	saved := savedFailfiles(t, class)
	for _, old := range saved {
		if b, err := os.ReadFile(old); err == nil && bytes.Equal(b, data) {
			return old, ""
		}
	}
	file = failfile(t, class)
	if len(saved) > 0 {
		sum := sha256.Sum256(data)
		file = filepath.Join(failDir(t), fmt.Sprintf("%s-%s.yaml", class, hex.EncodeToString(sum[:4])))
		note = fmt.Sprintf("saved beside the %d earlier counterexample(s) of this class (%s), which are kept and replayed first", len(saved), strings.Join(saved, ", "))
	}
	if os.MkdirAll(filepath.Dir(file), 0o755) != nil || os.WriteFile(file, data, 0o644) != nil {
		return "", ""
	}
	return file, note
}
