package reports

import (
	"fmt"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/scenarios"
)

// Interactive charts are built with go-echarts, but only its option objects
// are used: go-echarts renders pages whose <script src> points at a CDN, and
// our machines have no internet. A report inlines the local echarts.min.js
// (see loadECharts) and hands each option to echarts.init from a
// <script type="application/json"> block that html/template escapes.

// chartView is one interactive chart of a report.
type chartView struct {
	ID     string
	Title  string
	Help   string
	Height int
	Option map[string]any
}

func sec(d time.Duration) float64 { return float64(d.Microseconds()) / 1e6 }

// gap breaks a line series between two holding intervals.
var gap = opts.LineData{Value: "-"}

// buildCharts returns the interactive companions of the SVG timeline.
func buildCharts(res *scenarios.Result, prefix string) []chartView {
	var out []chartView
	out = append(out, holdingChart(res, prefix))
	for _, h := range res.Hosts {
		if !trivialClock(h) {
			out = append(out, clockChart(res, prefix))
			break
		}
	}
	out = append(out, stockChart(res, prefix))
	return out
}

// holdingChart is a Gantt chart: one category row per client, a thick line
// per believed holding interval, thin grey lines while waiting, faults and
// the overlap as marked areas. Zoomable.
func holdingChart(res *scenarios.Result, prefix string) chartView {
	clients := res.Scenario.ClientNames()
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "true time (s)", Min: 0}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: clients, Inverse: opts.Bool(true)}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "slider", XAxisIndex: []int{0}}, opts.DataZoom{Type: "inside", XAxisIndex: []int{0}}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: "30", Top: "40", Bottom: "70"}),
	)
	// Waiting stretches, all clients in one grey series.
	var waits []opts.LineData
	for _, w := range res.History.Wants {
		if w.To <= w.From {
			continue
		}
		name := fmt.Sprintf("%s waits %s → %s (%s)", w.Client, checker.Sec(w.From), checker.Sec(w.To), w.Outcome)
		waits = append(waits, opts.LineData{Name: name, Value: []any{sec(w.From), w.Client}}, opts.LineData{Name: name, Value: []any{sec(w.To), w.Client}}, gap)
	}
	line.AddSeries("waiting", waits,
		charts.WithLineStyleOpts(opts.LineStyle{Width: 3, Color: "#94a3b8", Type: "dashed"}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: "#94a3b8"}),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), ConnectNulls: opts.Bool(false)}),
	)
	for i, c := range clients {
		var data []opts.LineData
		for _, iv := range res.History.Intervals {
			if iv.Client != c {
				continue
			}
			name := fmt.Sprintf("%s holds %s → %s, ends: %s", c, checker.Sec(iv.Start), checker.Sec(iv.End), iv.EndReason)
			data = append(data, opts.LineData{Name: name, Value: []any{sec(iv.Start), c}}, opts.LineData{Name: name, Value: []any{sec(iv.End), c}}, gap)
		}
		if len(data) == 0 {
			continue
		}
		color := clientColor(i)
		line.AddSeries(c, data,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 14, Color: color}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), ConnectNulls: opts.Bool(false)}),
		)
	}
	// Marked areas: fault windows (amber) and the witness (red), on a
	// series of their own so they show with any legend selection.
	var areas []any
	for _, a := range res.Applied {
		if a.Until > a.At {
			areas = append(areas, []any{
				map[string]any{"xAxis": sec(a.At), "name": "fault: " + a.Text, "itemStyle": map[string]any{"color": "rgba(253,230,138,0.45)"}},
				map[string]any{"xAxis": sec(a.Until)},
			})
		}
	}
	w := res.Report.Witness
	if o := w.MutualExclusion; o != nil {
		areas = append(areas, []any{
			map[string]any{"xAxis": sec(o.From), "name": fmt.Sprintf("overlap: %s and %s", o.First.Client, o.Second.Client), "itemStyle": map[string]any{"color": "rgba(220,38,38,0.25)"}},
			map[string]any{"xAxis": sec(o.To)},
		})
	}
	if u := w.Liveness; u != nil {
		areas = append(areas, []any{
			map[string]any{"xAxis": sec(u.From), "name": "unavailable", "itemStyle": map[string]any{"color": "rgba(220,38,38,0.18)"}},
			map[string]any{"xAxis": sec(u.To)},
		})
	}
	line.AddSeries("faults and witness", nil, func(s *charts.SingleSeries) {
		s.MarkAreas = &opts.MarkAreas{Data: areas}
		s.MarkAreas.MarkAreaStyle.Label = &opts.Label{Show: opts.Bool(true), Position: "insideTop", Color: "#7f1d1d"}
	})
	line.Validate()
	return chartView{
		ID: prefix + "chart-holding", Title: "Who holds the lock (zoomable)", Height: 120 + 46*len(clients),
		Help:   "Drag the slider or scroll inside the chart to zoom; hover a bar for its interval.",
		Option: line.JSON(),
	}
}

// clockChart shows every host's clock offset from true time.
func clockChart(res *scenarios.Result, prefix string) chartView {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "true time (s)", Min: 0}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "clock − true time (ms)"}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: "30", Top: "40", Bottom: "40"}),
	)
	for _, h := range res.Hosts {
		if h.Role == "client" && trivialClock(h) {
			continue
		}
		if h.Role == "resource" {
			continue
		}
		var data []opts.LineData
		for _, p := range clockOffsets(h, res.End) {
			data = append(data, opts.LineData{Value: []any{sec(p.at), float64(p.off.Microseconds()) / 1000}})
		}
		line.AddSeries(h.Name, data, charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)}))
	}
	line.Validate()
	return chartView{
		ID: prefix + "chart-clocks", Title: "Clock offsets from true time", Height: 260,
		Help:   "A node whose clock runs ahead expires keys early; one that jumps expires them at once.",
		Option: line.JSON(),
	}
}

// stockChart shows the protected resource's value after each accepted
// write; the lost update stands out as a step that does not go down.
func stockChart(res *scenarios.Result, prefix string) chartView {
	h := res.History
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "true time (s)", Min: 0}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "stock", Scale: opts.Bool(true)}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: "30", Top: "40", Bottom: "40"}),
	)
	data := []opts.LineData{{Name: "initial stock", Value: []any{0.0, h.Initial}}}
	want := []opts.LineData{{Name: "initial stock", Value: []any{0.0, h.Initial}}}
	n, last := h.Initial, h.Initial
	for _, a := range h.Accesses {
		if a.Kind != "write" || !a.Accepted {
			continue
		}
		n--
		last = a.Value
		name := fmt.Sprintf("%s writes %d (read %d) at %s", a.Client, a.Value, a.Based, checker.Sec(a.At))
		data = append(data, opts.LineData{Name: name, Value: []any{sec(a.At), a.Value}})
		want = append(want, opts.LineData{Name: fmt.Sprintf("%d items sold", h.Initial-n), Value: []any{sec(a.At), n}})
	}
	data = append(data, opts.LineData{Name: "end of run", Value: []any{sec(res.End), last}})
	want = append(want, opts.LineData{Name: "end of run", Value: []any{sec(res.End), n}})
	line.AddSeries("stock (accepted writes)", data, charts.WithLineChartOpts(opts.LineChart{Step: "end"}))
	line.AddSeries("stock a serial order gives", want, charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}),
		charts.WithLineStyleOpts(opts.LineStyle{Type: "dashed"}))
	line.Validate()
	return chartView{
		ID: prefix + "chart-stock", Title: "The protected resource", Height: 260,
		Help:   "Every accepted write sells one item; where the solid line stays above the dashed one, an update was lost.",
		Option: line.JSON(),
	}
}
