package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Visualize writes porcupine's self-contained HTML view of the holds: one
// row per client, named as in the run, each hold's beginning and end with
// its true time in ms from the start of the run, fault windows as
// annotations. The page is byte-stable: porcupine gathers its partial
// linearizations in map order, so they are sorted here.
func (r *Report) Visualize(w io.Writer) error {
	if r.model.Step == nil { // a Report not made by Check: a mutex's
		r.model = mutexModel
	}
	_, info := porcupine.CheckOperationsVerbose(r.model, r.ops, 0)
	var notes []porcupine.Annotation
	for _, x := range r.excused {
		tag := "faults"
		if x.Client != "" {
			tag = x.Client + " (fault)"
		}
		notes = append(notes, porcupine.Annotation{
			Tag:         tag,
			Start:       2 * int64(x.From),
			End:         2 * int64(x.To),
			Description: x.Why,
			Details:     fmt.Sprintf("%s, %s to %s", x.Why, msText(int64(x.From)), msText(int64(x.To))),
		})
	}
	info.AddAnnotations(notes)
	var page bytes.Buffer
	if err := porcupine.Visualize(r.model, info, &page); err != nil {
		return err
	}
	out, err := stabilize(page.Bytes(), r.clients)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// The shape of porcupine's embedded data (visualization.go), as far as
// stabilize needs it. Unknown fields would be lost, so every field is here.
type vizData struct {
	Partitions  []vizPartition    `json:"Partitions"`
	Annotations []json.RawMessage `json:"Annotations"`
}

type vizPartition struct {
	History               []vizElement `json:"History"`
	PartialLinearizations [][]vizStep  `json:"PartialLinearizations"`
	Largest               map[int]int  `json:"Largest"`
}

type vizElement struct {
	ClientId      int
	Start         int
	OriginalStart string
	End           int
	OriginalEnd   string
	Description   string
	Metadata      string
}

type vizStep struct {
	Index            int
	StateDescription string
}

const dataPrefix = "const data = "

// Replacements in porcupine's script: client rows take their names from
// the run rather than their index.
var rowLabels = [][2]string{
	{"const tag = i < realClients ? i.toString() :", "const tag = i < realClients ? locklabClients[i] :"},
	{"text.textContent = i < realClients ? i :", "text.textContent = i < realClients ? locklabClients[i] :"},
}

// stabilize rewrites porcupine's page: partial linearizations in a fixed
// order (longest first, then by their steps) with Largest recomputed as
// porcupine computes it, times shown in ms from the start of the run, and
// client rows named.
func stabilize(page []byte, clients []string) ([]byte, error) {
	at := bytes.Index(page, []byte(dataPrefix))
	if at < 0 {
		return nil, fmt.Errorf("porcupine page has no %q", dataPrefix)
	}
	start := at + len(dataPrefix)
	end := start + bytes.IndexByte(page[start:], '\n')
	if end < start {
		return nil, fmt.Errorf("porcupine page: data does not end")
	}
	var data vizData
	if err := json.Unmarshal(page[start:end], &data); err != nil {
		return nil, fmt.Errorf("porcupine page data: %w", err)
	}
	for p := range data.Partitions {
		part := &data.Partitions[p]
		sort.SliceStable(part.PartialLinearizations, func(i, j int) bool {
			a, b := part.PartialLinearizations[i], part.PartialLinearizations[j]
			if len(a) != len(b) {
				return len(a) > len(b)
			}
			return slices.CompareFunc(a, b, func(x, y vizStep) int { return x.Index - y.Index }) < 0
		})
		size := map[int]int{}
		part.Largest = map[int]int{}
		for i, lin := range part.PartialLinearizations {
			for _, st := range lin {
				if size[st.Index] < len(lin) {
					size[st.Index] = len(lin)
					part.Largest[st.Index] = i
				}
			}
		}
		for i := range part.History {
			el := &part.History[i]
			el.OriginalStart = porcupineTimeMs(el.OriginalStart)
			el.OriginalEnd = porcupineTimeMs(el.OriginalEnd)
		}
	}
	js, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	names, _ := json.Marshal(clients)
	var out bytes.Buffer
	head := page[:at]
	for _, r := range rowLabels {
		head = bytes.ReplaceAll(head, []byte(r[0]), []byte(r[1]))
	}
	out.Write(head)
	fmt.Fprintf(&out, "const locklabClients = %s\n      %s", names, dataPrefix)
	out.Write(js)
	out.Write(page[end:])
	return out.Bytes(), nil
}

// porcupineTimeMs turns an operation's porcupine time (2t for an end, 2t+1
// for a beginning, t in ns) back into ms from the start of the run.
func porcupineTimeMs(s string) string {
	var v int64
	if _, err := fmt.Sscan(s, &v); err != nil {
		return s
	}
	return msText(v / 2)
}
