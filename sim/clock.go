package sim

import (
	"math"
	"math/bits"
	"time"
)

// Clock is a local clock: a piecewise-linear function of true time with an
// offset, a rate and jumps. Rates are kept in parts per million and all
// arithmetic is integer, so a clock reads the same on every machine (floating
// point multiply-add may be fused differently by different compilers).
//
// A Clock remembers every segment, so the true time at which it first shows a
// given local reading can be recovered after the run; the checker uses that to
// turn a lease's validity deadline, measured on the client's clock, into true
// time.
type Clock struct {
	segs []clockSegment
}

type clockSegment struct {
	fromTrue  time.Duration // true time where the segment starts
	fromLocal time.Duration // local reading at fromTrue
	ppm       int64         // rate is 1 + ppm/1e6
}

// NewClock returns a clock that reads true time plus offset and runs at rate
// 1 + ppm/1e6.
func NewClock(offset time.Duration, ppm int64) *Clock {
	return &Clock{segs: []clockSegment{{fromTrue: 0, fromLocal: offset, ppm: ppm}}}
}

func (c *Clock) segmentAt(t time.Duration) clockSegment {
	s := c.segs[0]
	for _, seg := range c.segs[1:] {
		if seg.fromTrue > t {
			break
		}
		s = seg
	}
	return s
}

func (s clockSegment) local(t time.Duration) time.Duration {
	d := t - s.fromTrue
	return s.fromLocal + d + time.Duration(int64(d)/1_000_000*s.ppm+int64(d)%1_000_000*s.ppm/1_000_000)
}

// Local is the clock's reading at true time t, as a duration since Epoch.
func (c *Clock) Local(t time.Duration) time.Duration { return c.segmentAt(t).local(t) }

// Time is the clock's reading at true time t as a wall-clock time.
func (c *Clock) Time(t time.Duration) time.Time { return Epoch.Add(c.Local(t)) }

// PPM is the clock's rate at true time t, in parts per million above 1.
func (c *Clock) PPM(t time.Duration) int64 { return c.segmentAt(t).ppm }

// Jump moves the clock by d at true time at (forward if d > 0). Jumps must be
// applied in true-time order, which the event queue guarantees.
func (c *Clock) Jump(at, d time.Duration) {
	s := c.segmentAt(at)
	c.segs = append(c.segs, clockSegment{fromTrue: at, fromLocal: s.local(at) + d, ppm: s.ppm})
}

// SetRate changes the clock's rate from true time at on.
func (c *Clock) SetRate(at time.Duration, ppm int64) {
	s := c.segmentAt(at)
	c.segs = append(c.segs, clockSegment{fromTrue: at, fromLocal: s.local(at), ppm: ppm})
}

// TrueDuration converts a duration measured by this clock's oscillator at true
// time t (a monotonic sleep, which wall-clock jumps do not affect) into true
// time.
func (c *Clock) TrueDuration(t, local time.Duration) time.Duration {
	ppm := c.segmentAt(t).ppm
	if ppm == 0 {
		return local
	}
	// local = true * (1e6+ppm)/1e6, so true = local*1e6/(1e6+ppm).
	den := 1_000_000 + ppm
	if den <= 0 {
		den = 1
	}
	return ScaleDuration(local, 1_000_000, den)
}

// ScaleDuration is d × num / den, exact (128-bit intermediate) and
// saturated at the largest duration of its sign instead of wrapping: a
// clock at -999999 ppm runs a million times slow, so 3 h on it is 3
// million hours of true time, and the old split arithmetic wrapped that to
// a negative duration that ended the work at once (issue 25). num and den
// must be positive; a saturated duration lies beyond any run's end.
func ScaleDuration(d time.Duration, num, den int64) time.Duration {
	neg := d < 0
	u := uint64(d)
	if neg {
		u = uint64(-(d + 1)) + 1 // |d|, also for the smallest duration
	}
	hi, lo := bits.Mul64(u, uint64(num))
	if hi >= uint64(den) {
		return saturated(neg)
	}
	q, _ := bits.Div64(hi, lo, uint64(den))
	if q > math.MaxInt64 {
		return saturated(neg)
	}
	if neg {
		return -time.Duration(q)
	}
	return time.Duration(q)
}

func saturated(neg bool) time.Duration {
	if neg {
		return math.MinInt64
	}
	return math.MaxInt64
}

// FirstReaches is the earliest true time at or after from at which the clock
// reads at least local. ok is false if it never does before horizon.
func (c *Clock) FirstReaches(local, from, horizon time.Duration) (time.Duration, bool) {
	for i, s := range c.segs {
		end := horizon
		if i+1 < len(c.segs) {
			end = c.segs[i+1].fromTrue
		}
		start := s.fromTrue
		if start < from {
			start = from
		}
		if start > end {
			continue
		}
		if s.local(start) >= local {
			return start, true
		}
		if s.local(end) < local {
			continue
		}
		// Binary search inside the segment: local() is monotone there.
		lo, hi := start, end
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if s.local(mid) >= local {
				hi = mid
			} else {
				lo = mid
			}
		}
		return hi, true
	}
	return 0, false
}

// Jumps lists the clock's discontinuities and rate changes, for reports.
func (c *Clock) Jumps() []ClockChange {
	var out []ClockChange
	for i, s := range c.segs[1:] {
		prev := c.segs[i]
		out = append(out, ClockChange{At: s.fromTrue, Jump: s.fromLocal - prev.local(s.fromTrue), PPM: s.ppm})
	}
	return out
}

// ClockChange is one jump or rate change of a clock.
type ClockChange struct {
	At   time.Duration
	Jump time.Duration
	PPM  int64
}

// Oscillator is the clock without its jumps: what a monotonic clock reads
// (Go's time.Since, CLOCK_MONOTONIC). A step of the wall clock (NTP, an
// operator) leaves it alone; a change of rate (drift) does not, because
// both count the same oscillator. It starts at the wall clock's initial
// reading. The view is a copy taken now: take it again after further
// changes.
func (c *Clock) Oscillator() *Clock {
	o := &Clock{segs: make([]clockSegment, len(c.segs))}
	var jumped time.Duration
	for i, s := range c.segs {
		if i > 0 {
			jumped += s.fromLocal - c.segs[i-1].local(s.fromTrue)
		}
		o.segs[i] = clockSegment{fromTrue: s.fromTrue, fromLocal: s.fromLocal - jumped, ppm: s.ppm}
	}
	return o
}
