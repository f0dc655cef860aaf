package locktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/scenarios"
)

// writeFailfile writes a failfile of a plain mutex on Redis recorded for
// test and class, as Run writes one.
func writeFailfile(t *testing.T, dir, test string, class Class) string {
	t.Helper()
	opt := Options{TTL: 2 * time.Second}
	if err := opt.defaults(); err != nil {
		t.Fatal(err)
	}
	sc, err := opt.base()
	if err != nil {
		t.Fatal(err)
	}
	sc.Clients.Count, sc.Seed = 2, 7
	sc.ID = "locktest-" + strings.ReplaceAll(test, "/", "-") + "-" + string(class) + "-" + string(class)
	sc.MadeFor = &scenarios.MadeFor{Test: test, Class: string(class), Lock: lockKind(sc)}
	data, err := sc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, string(class)+".yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// A failfile says what it was made for, and checkMadeFor names each
// difference: the test, the class, the primitive and the backend.
func TestCheckMadeForNamesWhatDiffers(t *testing.T) {
	file := writeFailfile(t, t.TempDir(), "TestRelease", Stall)
	sc, err := scenarios.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if sc.MadeFor == nil || sc.MadeFor.Test != "TestRelease" || sc.MadeFor.Lock != "mutex on redis" {
		t.Fatalf("made_for did not survive the file: %+v", sc.MadeFor)
	}
	semaphore := sc.Clone()
	semaphore.Clients.Permits = 2
	mysql := sc.Clone()
	mysql.Algorithm = customMySQL
	t.Run("stall", func(t *testing.T) {
		// A failfile of this very test and class, for the same lock, is
		// replayed (its id is not this test's; made_for is what counts).
		sc.MadeFor.Test = testOf(t)
		if err := checkMadeFor(t, file, sc, sc, Stall, ""); err != nil {
			t.Errorf("own failfile refused: %v", err)
		}
		sc.MadeFor.Test = "TestRelease"
		for _, c := range []struct {
			base  *scenarios.Scenario
			class Class
			want  []string
		}{
			{sc, Stall, []string{"refusing to replay " + file, "it was recorded for test TestRelease, this is TestCheckMadeForNamesWhatDiffers"}},
			{sc, Pause, []string{"it was recorded for fault class stall, this is pause"}},
			{semaphore, Stall, []string{"it was recorded for a mutex on redis, this test's lock is a semaphore of 2 permits on redis"}},
			{mysql, Stall, []string{"it was recorded for a mutex on redis, this test's lock is a mutex on mysql"}},
		} {
			err := checkMadeFor(t, file, sc, c.base, c.class, "x_test.go:9")
			for _, w := range c.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("replay into %s of a %s: %v; want it to say %q", c.class, lockKind(c.base), err, w)
				}
			}
		}
	})
}

// A failfile written before made_for is checked by its id, which names
// the test and class it was found in.
func TestCheckMadeForLegacyFailfile(t *testing.T) {
	sc, err := scenarios.Load("testdata/locktest/TestLibraryTable/redislock/pause.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("TestLibraryTable", func(t *testing.T) {
		t.Run("redislock", func(t *testing.T) {
			t.Run("pause", func(t *testing.T) {
				// t.Name() is TestCheckMadeForLegacyFailfile/..., not
				// TestLibraryTable/...: refused.
				if err := checkMadeFor(t, "pause.yaml", sc, sc, Pause, ""); err == nil || !strings.Contains(err.Error(), "its id locktest-TestLibraryTable-redislock-pause-pause is not this test's and class's") {
					t.Errorf("legacy failfile of another test: %v", err)
				}
			})
		})
	})
}

// Replaying a mutex's failfile into a 2-permit semaphore test or a MySQL
// test fails both tests with the refusal; neither passes, neither
// reports a violation of its own (issue 31 item 3: a false positive and
// a false pass).
func TestMismatchedReplayFailsTheTest(t *testing.T) {
	dir := t.TempDir()
	file := writeFailfile(t, dir, "TestRelease", Stall)
	out, err := helperArgs(t, "mismatched-replay", []string{"-locktest.replay=" + file}, "LOCKTEST_DIR="+dir)
	if err == nil {
		t.Fatalf("the helper passed:\n%s", out)
	}
	for _, want := range []string{
		"--- FAIL: TestHelperProcess/semaphore/stall",
		"this test's lock is a semaphore of 2 permits on redis",
		"--- FAIL: TestHelperProcess/mysql/drop",
		"it was recorded for fault class stall, this is drop",
		"this test's lock is a mutex on mysql",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"--- PASS: TestHelperProcess/semaphore", "--- PASS: TestHelperProcess/mysql", "mutual exclusion violated", "found in replay"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
}
