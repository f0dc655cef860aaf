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
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range events {
		if err := enc.Encode(&events[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}
