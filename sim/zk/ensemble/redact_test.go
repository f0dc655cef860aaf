package ensemble

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestRedactGUIDMatchesPattern holds the hand-written scan to what the
// pattern it replaced gives: every protected-name GUID, leftmost first and
// not overlapping, becomes "_c_…-", and nothing else changes.
func TestRedactGUIDMatchesPattern(t *testing.T) {
	pattern := regexp.MustCompile(`_c_[0-9a-f]{32}-`)
	guid := "0123456789abcdef0123456789abcdef"
	cases := []string{
		"", "/locks", "/locks/_c_" + guid + "-lock-0000000001",
		"/a/_c_" + guid + "-x/_c_" + guid + "-lock-0000000002",
		"/_c__c_" + guid + "-", "/_c_" + guid[:31] + "-", "/_c_" + guid + "X",
		"/_c_" + guid[:31] + "G-", "_c_" + guid + "-", "_c_" + guid + "-_c_" + guid + "-",
		"/_C_" + guid + "-", "/_c_0123456789ABCDEF0123456789abcdef-",
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := "_c-0af9gz/"
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.IntN(90))
		for k := range b {
			b[k] = alphabet[r.IntN(len(alphabet))]
		}
		// Plant a GUID (sometimes broken) so that matches are common.
		if len(b) > 40 && r.IntN(2) == 0 {
			at := r.IntN(len(b) - 36)
			copy(b[at:], "_c_"+guid+"-")
			if r.IntN(3) == 0 {
				b[at+3+r.IntN(33)] = 'g'
			}
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		want := c
		if len(c) >= 36 {
			want = pattern.ReplaceAllLiteralString(c, "_c_…-")
		}
		if got := redactGUID(c); got != want {
			t.Fatalf("redactGUID(%q) = %q, the pattern gives %q", c, got, want)
		}
	}
}

func FuzzRedactGUID(f *testing.F) {
	f.Add("/locks/_c_0123456789abcdef0123456789abcdef-lock-0000000001")
	pattern := regexp.MustCompile(`_c_[0-9a-f]{32}-`)
	f.Fuzz(func(t *testing.T, c string) {
		want := c
		if len(c) >= 36 {
			want = pattern.ReplaceAllLiteralString(c, "_c_…-")
		}
		if got := redactGUID(c); got != want {
			t.Fatalf("redactGUID(%q) = %q, the pattern gives %q", c, got, want)
		}
	})
}
