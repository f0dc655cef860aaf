package checker

import (
	"strings"
	"testing"
	"time"
)

// An overlap shorter than a millisecond prints at a precision that shows
// it; one that shows at milliseconds prints as before.
func TestOverlapPrecision(t *testing.T) {
	at := func(us int) time.Duration { return time.Duration(us) * time.Microsecond }
	o := &Overlap{
		First:  Interval{Client: "c1", Start: at(1_000_000), End: at(2_036_900), EndReason: "release"},
		Second: Interval{Client: "c2", Start: at(2_036_200), End: at(3_000_000), EndReason: "release"},
		From:   at(2_036_200), To: at(2_036_900),
	}
	if got := o.String(); !strings.HasSuffix(got, "both held during [2.036200s, 2.036900s)") {
		t.Errorf("0.7 ms overlap: %s", got)
	}
	o.To = at(2_100_000)
	if got := o.String(); !strings.HasSuffix(got, "both held during [2.036s, 2.100s)") {
		t.Errorf("64 ms overlap: %s", got)
	}
}
