package event

import (
	"bufio"
	"encoding/json"
	"io"
)

// WriteJSONLines writes events as JSON Lines: one object per line, keys in
// a fixed order (at_ns, actor, kind, then the kind's fields), zero fields
// left out, so one seed gives byte-identical output.
func WriteJSONLines(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	out := NewJSONLines(bw)
	for i := range events {
		if err := out.Write(&events[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// JSONLines writes events one at a time in WriteJSONLines's form, so a
// run's events can stream to a file as they happen instead of being kept
// (locklab run --events).
type JSONLines struct{ enc *json.Encoder }

// NewJSONLines writes to w (buffer it: each event is one small write).
func NewJSONLines(w io.Writer) *JSONLines {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &JSONLines{enc}
}

// Write writes one event as one line.
func (j *JSONLines) Write(e *Event) error { return j.enc.Encode(e) }
