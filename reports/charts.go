package reports

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
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
func buildCharts(res *runner.Result, prefix string) []chartView {
	var out []chartView
	out = append(out, holdingChart(res, prefix))
	if c, ok := sharedChart(res, prefix); ok {
		out = append(out, c) // semaphores and reader-writer locks (shared_charts.go)
	}
	out = append(out, latencyChart(res, prefix), throughputChart(res, prefix))
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
func holdingChart(res *runner.Result, prefix string) chartView {
	clients := res.Scenario.ClientNames()
	// Many clients share one series ("holding"), so the legend stays a
	// handful of entries; a few clients get one entry each.
	many := len(clients) > 10
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0", Type: "scroll"}),
		charts.WithXAxisOpts(timeAxis(res)),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: clients, Inverse: opts.Bool(true)}),
		charts.WithDataZoomOpts(opts.DataZoom{Type: "slider", XAxisIndex: []int{0}}, opts.DataZoom{Type: "inside", XAxisIndex: []int{0}}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: "30", Top: "40", Bottom: "90"}),
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
	var all []opts.LineData
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
		if many {
			all = append(all, data...)
			continue
		}
		color := clientColor(i)
		line.AddSeries(c, data,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 14, Color: color}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), ConnectNulls: opts.Bool(false)}),
		)
	}
	if many {
		line.AddSeries("holding (all clients)", all,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 8, Color: palette[0]}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: palette[0]}),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), ConnectNulls: opts.Bool(false)}),
		)
	}
	// Marked areas: fault windows (amber) and the witness (red), on a
	// series of their own so they show with any legend selection.
	areas := faultAreas(res)
	w := res.Report.Witness
	if o := w.MutualExclusion; o != nil {
		areas = append(areas, []any{
			map[string]any{"xAxis": sec(o.From), "name": "overlap: " + andList(witnessClients(o)), "itemStyle": map[string]any{"color": "rgba(220,38,38,0.25)"},
				"label": map[string]any{"show": true, "position": "insideBottomLeft", "color": "#7f1d1d"}},
			map[string]any{"xAxis": sec(o.To)},
		})
	}
	if u := w.Liveness; u != nil {
		areas = append(areas, []any{
			map[string]any{"xAxis": sec(u.From), "name": "unavailable", "itemStyle": map[string]any{"color": "rgba(220,38,38,0.18)"},
				"label": map[string]any{"show": true, "position": "insideBottomLeft", "color": "#7f1d1d"}},
			map[string]any{"xAxis": sec(u.To)},
		})
	}
	line.AddSeries("faults and witness", nil, func(s *charts.SingleSeries) {
		s.MarkAreas = &opts.MarkAreas{Data: areas}
		s.MarkAreas.MarkAreaStyle.Label = &opts.Label{Show: opts.Bool(true), Position: "insideTop", Color: "#7f1d1d"}
	})
	line.Validate()
	return chartView{
		ID: prefix + "chart-holding", Title: "Who holds the lock (zoomable)", Height: 150 + min(46*len(clients), 1400),
		Help:   "Drag the slider or scroll inside the chart to zoom; hover a bar for its interval.",
		Option: lean(line.JSON()),
	}
}

// clockChart shows every host's clock offset from true time.
func clockChart(res *runner.Result, prefix string) chartView {
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(timeAxis(res)),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "clock − true time (ms)", NameLocation: "middle", NameGap: 55}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "60"}),
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
		Option: lean(line.JSON()),
	}
}

// stockChart shows the protected resource's value after each accepted
// write; the lost update stands out as a step that does not go down.
func stockChart(res *runner.Result, prefix string) chartView {
	h := res.History
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(timeAxis(res)),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "stock", Scale: opts.Bool(true), NameLocation: "middle", NameGap: 50}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "60"}),
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
		Option: lean(line.JSON()),
	}
}

// timeAxis is the true-time axis every chart of a run shares: pinned to
// the whole run (not to the last data point), its name under the axis
// where it cannot be clipped.
func timeAxis(res *runner.Result) opts.XAxis {
	return opts.XAxis{Type: "value", Name: "true time (s)", NameLocation: "middle", NameGap: 28, Min: 0, Max: sec(res.End)}
}

// faultAreas are the marked areas of a run's charts: every fault window to
// its full extent (a partition that never heals to the end of the run),
// the overlap and the unavailable stretch of the witness.
func faultAreas(res *runner.Result) []any {
	var areas []any
	for _, a := range res.Applied {
		sp := readFaultSpan(res.Events, a, res.End)
		until, forever := sp.Until, sp.Forever
		if until <= a.At {
			continue
		}
		name := "fault: " + a.Text
		if forever {
			name += " (never heals)"
		}
		areas = append(areas, []any{
			map[string]any{"xAxis": sec(a.At), "name": name, "itemStyle": map[string]any{"color": "rgba(253,230,138,0.35)"},
				"label": map[string]any{"show": true, "position": "insideTopLeft", "color": "#92400e"}},
			map[string]any{"xAxis": sec(until)},
		})
	}
	return areas
}

// latencyChart plots how long each acquisition took (from wanting the lock
// to holding it, or giving up) against when it finished, with the fault
// windows shaded — the Jepsen-style view of what faults cost.
func latencyChart(res *runner.Result, prefix string) chartView {
	sc := charts.NewScatter()
	sc.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(timeAxis(res)),
		charts.WithYAxisOpts(opts.YAxis{Type: "log", Name: "acquire latency (ms)", NameLocation: "middle", NameGap: 55}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "60"}),
	)
	byOutcome := map[string][]opts.ScatterData{}
	var outcomes []string
	for _, w := range res.History.Wants {
		ms := math.Max(float64((w.To-w.From).Microseconds())/1000, 0.01)
		o := w.Outcome
		if o == "" {
			o = "other"
		}
		if _, ok := byOutcome[o]; !ok {
			outcomes = append(outcomes, o)
		}
		byOutcome[o] = append(byOutcome[o], opts.ScatterData{
			Name:  fmt.Sprintf("%s waited %s (%s), %s → %s", w.Client, dur(w.To-w.From), o, checker.Sec(w.From), checker.Sec(w.To)),
			Value: []any{sec(w.To), ms},
		})
	}
	sort.Strings(outcomes)
	for _, o := range outcomes {
		sc.AddSeries(o, byOutcome[o], charts.WithItemStyleOpts(opts.ItemStyle{Opacity: opts.Float(0.7)}))
	}
	sc.AddSeries("faults", nil, func(s *charts.SingleSeries) {
		s.MarkAreas = &opts.MarkAreas{Data: faultAreas(res)}
	})
	sc.Validate()
	return chartView{
		ID: prefix + "chart-latency", Title: "Acquire latency over time", Height: 300,
		Help:   "One dot per time a client wanted the lock: when it got it (or gave up), and how long that took. Faults are shaded.",
		Option: lean(sc.JSON()),
	}
}

// throughputChart plots acquisitions per second and, under them, how much
// of each second the lock was unavailable: nobody held it while some
// client wanted it.
func throughputChart(res *runner.Result, prefix string) chartView {
	end := max(res.End, time.Second)
	bin := niceBin(end)
	n := int((end + bin - 1) / bin)
	acq := make([]int, n)
	for _, iv := range res.History.Intervals {
		if i := int(iv.Start / bin); i >= 0 && i < n {
			acq[i]++
		}
	}
	unavail := make([]float64, n)
	for _, u := range unavailableStretches(res) {
		for i := int(u.from / bin); i < n && time.Duration(i)*bin < u.to; i++ {
			lo, hi := max(u.from, time.Duration(i)*bin), min(u.to, time.Duration(i+1)*bin)
			if hi > lo {
				unavail[i] += float64(hi-lo) / float64(bin) * 100
			}
		}
	}
	var xs []string
	var a []opts.BarData
	var u []opts.LineData
	perSec := float64(time.Second) / float64(bin)
	for i := 0; i < n; i++ {
		xs = append(xs, strconv.FormatFloat(sec(time.Duration(i)*bin), 'f', -1, 64))
		a = append(a, opts.BarData{Value: float64(acq[i]) * perSec})
		u = append(u, opts.LineData{Value: math.Round(unavail[i]*10) / 10})
	}
	bar := charts.NewBar()
	bar.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: fmt.Sprintf("true time (s), bins of %s", dur(bin)), NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "acquisitions / s", NameLocation: "middle", NameGap: 45}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "70", Top: "40", Bottom: "60"}),
	)
	bar.ExtendYAxis(opts.YAxis{Type: "value", Name: "unavailable (%)", Min: 0, Max: 100, NameLocation: "middle", NameGap: 45})
	bar.SetXAxis(xs)
	bar.AddSeries("acquisitions per second", a, charts.WithItemStyleOpts(opts.ItemStyle{Color: "#2563eb"}))
	line := charts.NewLine()
	line.AddSeries("unavailable (% of the bin)", u, charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1, Step: "middle"}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: "#dc2626"}), charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.15)}))
	bar.Overlap(line)
	bar.Validate()
	return chartView{
		ID: prefix + "chart-throughput", Title: "Acquisitions per second and unavailability", Height: 300,
		Help:   "Bars: how many times the lock was granted per second. Red: the share of each bin during which nobody held the lock while some client wanted it.",
		Option: lean(bar.JSON()),
	}
}

// niceBin picks a bin width giving at most about 60 bins over d.
func niceBin(d time.Duration) time.Duration {
	for _, b := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute} {
		if d/b <= 60 {
			return b
		}
	}
	return 5 * time.Minute
}

type stretch struct{ from, to time.Duration }

// unavailableStretches are the stretches of true time during which some
// client wanted the lock and nobody believed it held it.
func unavailableStretches(res *runner.Result) []stretch {
	type edge struct {
		at    time.Duration
		want  int
		holds int
	}
	var ev []edge
	for _, w := range res.History.Wants {
		if w.To > w.From {
			ev = append(ev, edge{w.From, 1, 0}, edge{w.To, -1, 0})
		}
	}
	for _, iv := range res.History.Intervals {
		if iv.End > iv.Start {
			ev = append(ev, edge{iv.Start, 0, 1}, edge{iv.End, 0, -1})
		}
	}
	sort.SliceStable(ev, func(i, j int) bool { return ev[i].at < ev[j].at })
	var out []stretch
	wants, holds := 0, 0
	var open time.Duration = -1
	for i := 0; i < len(ev); {
		at := ev[i].at
		for i < len(ev) && ev[i].at == at {
			wants += ev[i].want
			holds += ev[i].holds
			i++
		}
		down := wants > 0 && holds == 0
		switch {
		case down && open < 0:
			open = at
		case !down && open >= 0:
			out = append(out, stretch{open, at})
			open = -1
		}
	}
	if open >= 0 {
		out = append(out, stretch{open, res.End})
	}
	return out
}

// lean rewrites a chart option into its shortest equivalent JSON: a data
// item that carries nothing but a value ({"value": 10}, or the gap
// {"value": "-"}) becomes the bare value, which ECharts reads the same way,
// and settings equal to what ECharts would use anyway are left out.
// The option goes through encoding/json once, so the page gets the same
// sorted, deterministic text as before.
func lean(opt map[string]any) map[string]any {
	raw, err := json.Marshal(opt)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	for _, k := range []string{"title", "toolbox"} {
		if m, ok := out[k].(map[string]any); ok && len(m) == 0 {
			delete(out, k) // empty: ECharts' defaults
		}
	}
	series, _ := out["series"].([]any)
	for _, s := range series {
		sm, _ := s.(map[string]any)
		if sm["animation"] == out["animation"] {
			delete(sm, "animation") // a series inherits the chart's setting
		}
		if sm["connectNulls"] == false {
			delete(sm, "connectNulls") // false is ECharts' default
		}
		data, _ := sm["data"].([]any)
		for i, d := range data {
			if dm, ok := d.(map[string]any); ok && len(dm) == 1 {
				if v, ok := dm["value"]; ok {
					data[i] = v
				}
			}
		}
	}
	return out
}
