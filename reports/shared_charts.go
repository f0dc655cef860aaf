package reports

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
)

// A semaphore may have up to Permits holders at once, a reader-writer lock
// any number of readers or one writer: the holding chart shows who holds,
// and this chart how many hold at each instant against what the primitive
// allows. It is drawn from the history's holds (the HoldBegan and hold-end
// events the checker reads), nothing else.

// holdStep is one instant where the number of holders changes.
type holdStep struct {
	at      time.Duration
	readers []string // holders in read mode (a reader-writer lock)
	others  []string // every other holder (a semaphore's, a writer)
}

// holdSteps sweeps the holds: at each instant a hold begins or ends, who
// holds from then on. Holds are half-open, [Start, End): a hold that ends
// at the instant another begins does not overlap it.
func holdSteps(ivs []checker.Interval) []holdStep {
	type edge struct {
		at    time.Duration
		begin bool
		iv    checker.Interval
	}
	var edges []edge
	for _, iv := range ivs {
		if iv.End <= iv.Start {
			continue
		}
		edges = append(edges, edge{iv.Start, true, iv}, edge{iv.End, false, iv})
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.begin != b.begin {
			if a.begin {
				return 1 // ends first
			}
			return -1
		}
		return cmp.Compare(a.iv.Client, b.iv.Client)
	})
	holding := map[string]int{} // client:mode → holds
	var out []holdStep
	for i, e := range edges {
		k := e.iv.Client + "\x00" + e.iv.Mode
		if e.begin {
			holding[k]++
		} else if holding[k]--; holding[k] == 0 {
			delete(holding, k)
		}
		if i+1 < len(edges) && edges[i+1].at == e.at {
			continue
		}
		s := holdStep{at: e.at}
		for k, n := range holding {
			client, mode, _ := strings.Cut(k, "\x00")
			for ; n > 0; n-- {
				if mode == checker.ModeRead {
					s.readers = append(s.readers, client)
				} else {
					s.others = append(s.others, client)
				}
			}
		}
		slices.Sort(s.readers)
		slices.Sort(s.others)
		out = append(out, s)
	}
	return out
}

// sharedChart is the "how many hold" chart of a semaphore or a
// reader-writer lock; ok is false for a mutex.
func sharedChart(res *runner.Result, prefix string) (chartView, bool) {
	permits := res.Scenario.Clients.Permits
	rw := slices.ContainsFunc(res.History.Intervals, func(iv checker.Interval) bool { return iv.Mode == checker.ModeRead })
	if permits <= 1 && !rw {
		return chartView{}, false
	}
	steps := holdSteps(res.History.Intervals)
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{Width: "100%", Height: "100%"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0"}),
		charts.WithXAxisOpts(timeAxis(res)),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: "holders", MinInterval: 1, NameLocation: "middle", NameGap: 40}),
		charts.WithGridOpts(opts.Grid{Left: "80", Right: "30", Top: "40", Bottom: "60"}),
	)
	point := func(at time.Duration, n int, who []string, what string) opts.LineData {
		name := fmt.Sprintf("%s, %s: %d", checker.Sec(at), what, n)
		if len(who) > 0 {
			name += " (" + strings.Join(who, " ") + ")"
		}
		return opts.LineData{Name: name, Value: []any{sec(at), n}}
	}
	if !rw {
		data := []opts.LineData{point(0, 0, nil, "permits in use")}
		for _, s := range steps {
			data = append(data, point(s.at, len(s.others), s.others, "permits in use"))
		}
		data = append(data, point(res.End, 0, nil, "permits in use"))
		line.AddSeries("permits in use", data, charts.WithLineChartOpts(opts.LineChart{Step: "end"}), func(s *charts.SingleSeries) {
			s.MarkLines = &opts.MarkLines{Data: []any{map[string]any{"yAxis": permits, "name": fmt.Sprintf("%d permits", permits),
				"lineStyle": map[string]any{"color": witnessRed, "type": "dashed"}}}}
		})
		line.Validate()
		return chartView{
			ID: prefix + "chart-permits", Title: "Permits in use", Height: 240,
			Help:   fmt.Sprintf("How many clients hold a permit at each instant; above the dashed line (%d permits) the semaphore has more holders than permits. Hover a step for the holders.", permits),
			Option: lean(line.JSON()),
		}, true
	}
	readers := []opts.LineData{point(0, 0, nil, "readers")}
	writers := []opts.LineData{point(0, 0, nil, "writers")}
	for _, s := range steps {
		readers = append(readers, point(s.at, len(s.readers), s.readers, "readers"))
		writers = append(writers, point(s.at, len(s.others), s.others, "writers"))
	}
	readers = append(readers, point(res.End, 0, nil, "readers"))
	writers = append(writers, point(res.End, 0, nil, "writers"))
	line.AddSeries("readers", readers, charts.WithLineChartOpts(opts.LineChart{Step: "end"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: readerColor}))
	line.AddSeries("writers", writers, charts.WithLineChartOpts(opts.LineChart{Step: "end"}), charts.WithItemStyleOpts(opts.ItemStyle{Color: witnessRed}))
	line.Validate()
	return chartView{
		ID: prefix + "chart-readers-writers", Title: "Readers and writers holding", Height: 240,
		Help:   "How many readers and writers hold at each instant: readers may share the lock, a writer may not share it with anyone. Hover a step for the holders.",
		Option: lean(line.JSON()),
	}, true
}

// readerColor is the readers' series colour (a writer's is the witness
// red: a writer that overlaps anyone is the violation).
const readerColor = "#2563eb"

// andList joins names as a sentence does: "c1 and c2", "c2, c3 and c4".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
