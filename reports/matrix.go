package reports

import (
	"fmt"
	"io"
	"math"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
)

// MatrixData is the input of WriteMatrix: lock algorithms (rows) against
// fault classes (columns), and for each pair the share of runs that
// violated each property.
type MatrixData struct {
	// Title heads the page; empty gives "Lock algorithms × fault classes".
	Title string
	// Note is shown under the title (for example how many seeds per cell).
	Note string
	// Algorithms and FaultClasses fix the order of rows and columns; when
	// empty, the order in which Cells first mention them is used. Names
	// that appear only in Cells are appended.
	Algorithms   []string
	FaultClasses []string
	Cells        []MatrixCell
	// Columns and Rows describe the setup of each fault class and each
	// algorithm's runs (optional; matched by name).
	Columns []MatrixColumn
	Rows    []MatrixRow
}

// MatrixColumn says what a fault class does.
type MatrixColumn struct {
	Name, Setup string
}

// MatrixRow says how an algorithm's runs are set up.
type MatrixRow struct {
	Name, Setup string
}

// MatrixCell is one algorithm under one fault class.
type MatrixCell struct {
	Algorithm  string
	FaultClass string
	// Runs is how many runs (seeds) the shares are taken over.
	Runs int
	// Shares of the runs that violated each property, each in [0, 1].
	MutualExclusion float64
	Resource        float64
	Liveness        float64
	// Example links to the report of one run of this cell (a relative path
	// or an http(s) URL); empty for none.
	Example string
}

// matrixView is the laid-out heatmap.
type matrixView struct {
	Title, Note   string
	Width, Height float64
	Cols, Rows    []matrixLabel
	Cells         []matrixCellView
	Table         []matrixTableRow
	Columns       []MatrixColumn
	RowSetups     []MatrixRow
	Scale         []matrixScaleStop
	Charts        []chartView
	ChartsNote    string
}

type matrixTableRow struct {
	MatrixCell
	M, R, L string // "7 of 10 (70%)"
}

type matrixScaleStop struct {
	Fill, Ink, Text string
}

type matrixLabel struct {
	X, Y float64
	Text string
}

type matrixCellView struct {
	Algorithm, FaultClass string
	Runs                  int
	Example               string
	CX, CY                float64
	Parts                 []matrixPart
}

type matrixPart struct {
	X, Y, W, H float64
	TX, TY     float64
	Fill, Ink  string
	Text       string
	Title      string
}

// WriteMatrix writes the HTML page of a matrix: an SVG heatmap (no
// JavaScript needed) and the same data as a table.
func WriteMatrix(w io.Writer, m MatrixData) error {
	ec := loadECharts()
	p := newPage(orTitle(m.Title)+" — locklab", ec)
	p.Matrix = layoutMatrix(m)
	if ec.ok() {
		p.Matrix.Charts = matrixCharts(p.Matrix)
	} else {
		p.Matrix.ChartsNote = ec.note
	}
	return pages.ExecuteTemplate(w, "matrix-page", p)
}

// matrixCharts plots, per fault class, the share of all its runs (every
// algorithm together) that violated each property: which faults hurt most.
func matrixCharts(v *matrixView) []chartView {
	var classes []string
	seen := map[string]bool{}
	type tally struct{ runs, m, r, l float64 }
	sum := map[string]*tally{}
	for _, c := range v.Table {
		if !seen[c.FaultClass] {
			seen[c.FaultClass] = true
			classes = append(classes, c.FaultClass)
			sum[c.FaultClass] = &tally{}
		}
		t, n := sum[c.FaultClass], float64(c.Runs)
		t.runs += n
		t.m += clamp01(c.MutualExclusion) * n
		t.r += clamp01(c.Resource) * n
		t.l += clamp01(c.Liveness) * n
	}
	share := func(f func(*tally) float64) []opts.BarData {
		var out []opts.BarData
		for _, c := range classes {
			t := sum[c]
			pct := 0.0
			if t.runs > 0 {
				pct = math.Round(f(t)/t.runs*1000) / 10
			}
			out = append(out, opts.BarData{Value: pct, Name: fmt.Sprintf("%s: %.0f of %.0f runs", c, f(t), t.runs)})
		}
		return out
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "fault class", NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "runs violated (%)", Min: 0, Max: 100, NameLocation: "middle", NameGap: 45}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "60"}),
	)
	bar.SetXAxis(classes)
	bar.AddSeries("mutual exclusion", share(func(t *tally) float64 { return t.m }), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#dc2626"}))
	bar.AddSeries("resource safety", share(func(t *tally) float64 { return t.r }), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#b45309"}))
	bar.AddSeries("liveness", share(func(t *tally) float64 { return t.l }), charts.WithItemStyleOpts(opts.ItemStyle{Color: "#7c3aed"}))
	bar.Validate()
	return []chartView{{ID: "chart-matrix-classes", Title: "Which faults hurt most", Height: 320,
		Help:   "For each fault class, the share of all its runs (every algorithm together) that violated each property.",
		Option: bar.JSON()}}
}

func orTitle(s string) string {
	if s == "" {
		return "Lock algorithms × fault classes"
	}
	return s
}

func appendNew(list []string, seen map[string]bool, names ...string) []string {
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			list = append(list, n)
		}
	}
	return list
}

func layoutMatrix(m MatrixData) *matrixView {
	seenA, seenF := map[string]bool{}, map[string]bool{}
	algs := appendNew(nil, seenA, m.Algorithms...)
	cls := appendNew(nil, seenF, m.FaultClasses...)
	cells := map[[2]string]MatrixCell{}
	for _, c := range m.Cells {
		algs = appendNew(algs, seenA, c.Algorithm)
		cls = appendNew(cls, seenF, c.FaultClass)
		cells[[2]string{c.Algorithm, c.FaultClass}] = c
	}
	const (
		labelW = 230.0
		part   = 46.0
		gap    = 4.0
		cellW  = 3*part + 2*gap + 18
		headH  = 34.0
		rowH   = part + 26
	)
	v := &matrixView{Title: orTitle(m.Title), Note: m.Note}
	for _, c := range m.Cells {
		v.Table = append(v.Table, matrixTableRow{MatrixCell: c, M: countOf(c.MutualExclusion, c.Runs), R: countOf(c.Resource, c.Runs), L: countOf(c.Liveness, c.Runs)})
	}
	for _, s := range []float64{0, 0.1, 0.25, 0.5, 0.75, 1} {
		fill, ink := heat(s)
		v.Scale = append(v.Scale, matrixScaleStop{Fill: fill, Ink: ink, Text: fmt.Sprintf("%.0f%%", s*100)})
	}
	colSetup := map[string]string{}
	for _, c := range m.Columns {
		colSetup[c.Name] = c.Setup
	}
	rowSetup := map[string]string{}
	for _, r := range m.Rows {
		rowSetup[r.Name] = r.Setup
	}
	v.Width = labelW + cellW*float64(max(len(cls), 1)) + 10
	v.Height = headH + rowH*float64(max(len(algs), 1)) + 6
	for j, c := range cls {
		v.Cols = append(v.Cols, matrixLabel{X: labelW + cellW*float64(j) + cellW/2, Y: 22, Text: c})
		if colSetup[c] != "" {
			v.Columns = append(v.Columns, MatrixColumn{Name: c, Setup: colSetup[c]})
		}
	}
	for _, a := range algs {
		if rowSetup[a] != "" {
			v.RowSetups = append(v.RowSetups, MatrixRow{Name: a, Setup: rowSetup[a]})
		}
	}
	for i, a := range algs {
		y := headH + rowH*float64(i)
		v.Rows = append(v.Rows, matrixLabel{X: labelW - 10, Y: y + part/2 + 5, Text: a})
		for j, fc := range cls {
			x0 := labelW + cellW*float64(j) + 9
			c, ok := cells[[2]string{a, fc}]
			cv := matrixCellView{Algorithm: a, FaultClass: fc, Runs: c.Runs, Example: c.Example, CX: x0 + (3*part+2*gap)/2, CY: y + part + 14}
			for k, prop := range []struct {
				short, name string
				share       float64
			}{{"M", "mutual exclusion", c.MutualExclusion}, {"R", "resource safety", c.Resource}, {"L", "liveness", c.Liveness}} {
				px := x0 + float64(k)*(part+gap)
				mp := matrixPart{X: px, Y: y, W: part, H: part, TX: px + part/2, TY: y + part/2 + 4}
				if !ok {
					mp.Fill, mp.Ink, mp.Text = "#f1f5f9", "#94a3b8", prop.short+" —"
					mp.Title = fmt.Sprintf("%s under %s: no runs", a, fc)
				} else {
					s := clamp01(prop.share)
					mp.Fill, mp.Ink = heat(s)
					mp.Text = fmt.Sprintf("%s %.0f%%", prop.short, s*100)
					mp.Title = fmt.Sprintf("%s under %s: %s violated in %s runs", a, fc, prop.name, countOf(s, c.Runs))
				}
				cv.Parts = append(cv.Parts, mp)
			}
			if !ok {
				cv.Runs = 0
			}
			v.Cells = append(v.Cells, cv)
		}
	}
	return v
}

// countOf turns a share of n runs back into "7 of 10 (70%)".
func countOf(share float64, n int) string {
	share = clamp01(share)
	return fmt.Sprintf("%d of %d (%.0f%%)", int(math.Round(share*float64(n))), n, share*100)
}

func clamp01(v float64) float64 {
	if math.IsNaN(v) || v < 0 {
		return 0
	}
	return min(v, 1)
}

// heat maps a share to a fill (white to deep red) and a readable ink.
func heat(s float64) (fill, ink string) {
	if s == 0 {
		return "#ffffff", "#475569"
	}
	// From #fee2e2 (a trace) to #991b1b (always).
	lerp := func(a, b float64) int { return int(math.Round(a + (b-a)*s)) }
	fill = fmt.Sprintf("#%02x%02x%02x", lerp(0xfe, 0x99), lerp(0xe2, 0x1b), lerp(0xe2, 0x1b))
	ink = "#7f1d1d"
	if s > 0.45 {
		ink = "#ffffff"
	}
	return fill, ink
}
