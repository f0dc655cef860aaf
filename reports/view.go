package reports

import (
	"fmt"
	"html/template"
	"sort"
	"strings"
	"time"

	"github.com/locklab/locklab/algorithms"
	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// runView is everything the "run" template prints about one run. Strings are
// plain text: the template escapes them.
type runView struct {
	P string // element id prefix, unique on the page
	// Stopped says the run was cut short by a limit (the work budget, or
	// time that stopped): its verdict covers the history up to the cut.
	Stopped          string
	Heading          string // "broken" / "fixed" on a lesson page
	Compact          bool   // on a lesson page: the whole-run timeline is drawn above
	HeadingClass     string
	ChartsNote       string // why there are no interactive charts
	ID, Title        string
	Algorithm        string
	AlgorithmSummary string
	Setup            string
	Seed             uint64
	Simulated        string
	Replay           string
	TraceSHA         string
	TraceLines       int
	Twin             string
	TwinHref         string // link to the twin's page, when there is one
	Matches          bool
	Narrative        narrativeView
	Verdicts         []verdictRow
	Witnesses        []witnessView
	Timeline         *timeline
	Zoom             *timeline
	Faults           []faultRow
	Metrics          []metricRow
	Params           []paramRow
	YAML             string
	Compared         []compareRow
	Trace            []traceRow
	TraceOmitted     int
	TraceTotal       int
	Actors           []string
	Viz              string
	VizErr           string
	// VizData is porcupine's data alone, for pages that share one copy of
	// porcupine's viewer (PorcupineFile) instead of embedding it per run.
	VizData   template.JS
	VizShared bool
	vizViewer string // porcupine's viewer, split from its page
	clients   int    // clients in the run (the course leaves per-client views out above courseClientViews)
	Charts    []chartView
	Herd      *herdChart // watch notifications per waiter, when the run compares recipes
}

type narrativeView struct {
	What, Why, Fix string
	Sources        []sourceLink
}

type sourceLink struct {
	URL  string // only http(s) URLs become links
	Text string
}

type verdictRow struct {
	Property string
	Got      string
	Expected string
	Match    bool
	Asserted bool
}

type witnessView struct {
	Property string
	Summary  string // the checker's one-line witness
	Explain  string // what it means, in words
}

type faultRow struct {
	At, Until string
	Text      string
	Note      string
}

type metricRow struct {
	Name, Value string
}

type paramRow struct {
	Name, Value string
}

type compareRow struct {
	Algorithm string
	Summary   string
	Main      bool
	Verdict   checker.Verdict
	Metrics   []metricRow
}

func newRunView(res *runner.Result, cmp []runner.Comparison, replay, prefix string, withCharts bool) *runView {
	sc := res.Scenario
	info, _ := algorithms.Lookup(sc.Algorithm)
	var stopped string
	if res.Stopped != nil {
		stopped = res.Stopped.Text()
	}
	v := &runView{
		Stopped:          stopped,
		P:                prefix,
		ID:               sc.ID,
		Title:            sc.Title,
		Algorithm:        sc.Algorithm,
		AlgorithmSummary: info.Summary,
		Seed:             res.Seed,
		Simulated:        fmt.Sprintf("%.3fs", res.End.Seconds()),
		Replay:           replay,
		TraceSHA:         res.TraceSHA256,
		TraceLines:       res.TraceLines,
		Twin:             sc.Twin,
		Matches:          res.Matches(),
	}
	if v.Replay == "" {
		v.Replay = fmt.Sprintf("locklab run %s --seed %d", sc.ID, res.Seed)
	}
	v.Setup = fmt.Sprintf("%d clients (%s) · %s · TTL %s · seed %d · %s simulated",
		sc.Clients.Count, nameList(sc.ClientNames()), hostSummary(res), sc.TTL, res.Seed, v.Simulated)

	v.Narrative = narrativeView{What: sc.Narrative.What, Why: sc.Narrative.Why, Fix: sc.Narrative.Fix}
	for _, s := range sc.Narrative.Sources {
		v.Narrative.Sources = append(v.Narrative.Sources, parseSource(s))
	}

	v.Verdicts = verdictRows(res)
	v.Witnesses = witnessViews(res)

	mech := deriveMechanism(res)
	v.Timeline = buildTimelineMech(res, mech, prefix+"tl-", 0, res.End+res.End/40, false)
	v.Timeline.Caption = "The whole run in true time. Each client row shows when it waited for the lock and when it believed it held it; host rows show clocks and crashes; faults are shaded amber, the violation is red."
	if from, to, ok := zoomWindow(res); ok {
		v.Zoom = buildTimelineMech(res, mech, prefix+"zoom-", from, to, true)
		v.Zoom.Caption = fmt.Sprintf("Zoom on the violation: %s to %s.", checker.Sec(from), checker.Sec(to))
	}

	v.Faults = faultRows(res)
	v.Metrics = runMetrics(res)
	v.Params = params(sc)
	v.YAML = setupYAML(sc)
	v.Compared = compareRows(res, cmp, info.Summary)
	if len(cmp) > 0 {
		v.Herd = newHerdChart(herdRuns(RunInput{Result: res, Compared: cmp}))
	}
	v.clients = res.Scenario.Clients.Count
	v.Trace, v.TraceOmitted, v.Actors = traceRows(res)
	v.TraceTotal = len(res.Trace)

	v.setViz(res)
	if withCharts {
		v.Charts = buildCharts(res, prefix)
	}
	return v
}

// nameList joins names, abbreviating long lists to "c1, c2, … c100".
func nameList(names []string) string {
	if len(names) > 6 {
		return strings.Join(names[:2], ", ") + ", … " + names[len(names)-1]
	}
	return strings.Join(names, ", ")
}

// hostSummary lists the run's servers by role: "redis nodes A, B, C".
func hostSummary(res *runner.Result) string {
	var roles []string
	byRole := map[string][]string{}
	for _, h := range res.Hosts {
		if h.Role == "client" || h.Role == "resource" || h.Name == scenarios.ResourceHost {
			continue
		}
		if _, ok := byRole[h.Role]; !ok {
			roles = append(roles, h.Role)
		}
		byRole[h.Role] = append(byRole[h.Role], h.Name)
	}
	if len(roles) == 0 {
		return "no lock servers"
	}
	var parts []string
	for _, r := range roles {
		noun := "nodes"
		if len(byRole[r]) == 1 {
			noun = "node"
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", r, noun, nameList(byRole[r])))
	}
	return strings.Join(parts, " · ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// parseSource splits "https://... (comment)" into a link and its text.
func parseSource(s string) sourceLink {
	s = strings.TrimSpace(s)
	url, rest, _ := strings.Cut(s, " ")
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		text := strings.TrimSpace(rest)
		text = strings.TrimSuffix(strings.TrimPrefix(text, "("), ")")
		return sourceLink{URL: url, Text: text}
	}
	return sourceLink{Text: s}
}

func reasonPhrase(r string) string {
	switch r {
	case "release":
		return "until it released"
	case "validity":
		return "until it checked its lease and found it had run out"
	case "crash":
		return "until it crashed"
	case "lost":
		return "until it learned it had lost the lock"
	case "end of run":
		return "until the end of the run"
	}
	return "until " + r
}

func witnessViews(res *runner.Result) []witnessView {
	w := res.Report.Witness
	var out []witnessView
	if o := w.MutualExclusion; o != nil {
		out = append(out, witnessView{
			Property: "mutual exclusion",
			Summary:  o.String(),
			Explain: fmt.Sprintf("%s believed it held the lock from %s %s; %s believed it held it from %s %s. For %s — from %s to %s, the red band — both acted as the only holder.",
				o.First.Client, checker.Sec(o.First.Start), reasonPhrase(o.First.EndReason),
				o.Second.Client, checker.Sec(o.Second.Start), reasonPhrase(o.Second.EndReason),
				dur(o.To-o.From), checker.Sec(o.From), checker.Sec(o.To)),
		})
	}
	if r := w.Resource; r != nil {
		out = append(out, witnessView{Property: "resource safety", Summary: r.String(), Explain: resourceExplain(r)})
	}
	if u := w.Liveness; u != nil {
		out = append(out, witnessView{
			Property: "liveness",
			Summary:  u.String(),
			Explain: fmt.Sprintf("From %s to %s (%s, longer than the bound of %s) nobody held the lock, yet %s wanted it and could not get it.",
				checker.Sec(u.From), checker.Sec(u.To), dur(u.To-u.From), dur(u.Bound), strings.Join(u.Waiting, ", ")),
		})
	}
	return out
}

// zoomWindow is the stretch of true time around the witness, when it is
// small enough against the whole run to deserve a close-up: the overlap and
// the lost update together if they are close, else the overlap alone, else
// the lost update alone. (An unavailable stretch is long by nature.)
func zoomWindow(res *runner.Result) (from, to time.Duration, ok bool) {
	if res.End <= 0 {
		return 0, 0, false
	}
	type span struct{ from, to time.Duration }
	var spans []span
	w := res.Report.Witness
	if o := w.MutualExclusion; o != nil {
		spans = append(spans, span{o.From, o.To})
	}
	if r := w.Resource; r != nil {
		spans = append(spans, span{min(r.Overwritten.At, r.Write.At), max(r.Overwritten.At, r.Write.At)})
	}
	horizon := res.End + res.End/40
	fits := func(s span, share float64) (time.Duration, time.Duration, bool) {
		pad := max((s.to-s.from)/4, res.End/50)
		a, b := max(0, s.from-pad), min(horizon, s.to+pad)
		return a, b, float64(b-a) <= float64(res.End)*share
	}
	if len(spans) == 2 {
		if a, b, ok := fits(span{min(spans[0].from, spans[1].from), max(spans[0].to, spans[1].to)}, 0.35); ok {
			return a, b, true
		}
	}
	for _, s := range spans {
		if a, b, ok := fits(s, 0.6); ok {
			return a, b, true
		}
	}
	return 0, 0, false
}

func runMetrics(res *runner.Result) []metricRow {
	m := res.Report.Metrics
	out := []metricRow{
		{"acquisitions", fmt.Sprint(m.Acquisitions)},
		{"writes accepted", fmt.Sprint(m.Writes)},
		{"writes rejected", fmt.Sprint(m.RejectedWrites)},
		{"final stock", fmt.Sprintf("%d (started at %d)", m.FinalValue, res.History.Initial)},
		{"longest unavailable", dur(m.Unavailable)},
		{"messages", fmt.Sprintf("%d (%d lost)", res.Messages, res.Dropped)},
		{"trace events", fmt.Sprint(res.TraceLines)},
		{"porcupine", res.Report.Porcupine},
	}
	for _, bm := range res.Metrics {
		out = append(out, metricRow{strings.ReplaceAll(bm.Name, "_", " "), fmt.Sprint(bm.Value)})
	}
	return out
}

func compareMetrics(r *runner.Result, backend []runner.Metric) []metricRow {
	var out []metricRow
	if r != nil {
		m := r.Report.Metrics
		out = append(out,
			metricRow{"acquisitions", fmt.Sprint(m.Acquisitions)},
			metricRow{"longest unavailable", dur(m.Unavailable)},
			metricRow{"messages", fmt.Sprint(r.Messages)},
		)
	}
	for _, bm := range backend {
		out = append(out, metricRow{strings.ReplaceAll(bm.Name, "_", " "), fmt.Sprint(bm.Value)})
	}
	return out
}

func params(sc *scenarios.Scenario) []paramRow {
	var nodes []string
	for _, n := range sc.Nodes {
		s := n.Name
		var extra []string
		if n.Offset != 0 {
			extra = append(extra, "offset "+signed(n.Offset.D()))
		}
		if n.PPM != 0 {
			extra = append(extra, fmt.Sprintf("%+d ppm", n.PPM))
		}
		if n.Replica != "" {
			extra = append(extra, "replica of "+n.Replica)
		}
		if len(extra) > 0 {
			s += " (" + strings.Join(extra, ", ") + ")"
		}
		nodes = append(nodes, s)
	}
	rows := []paramRow{
		{"id", sc.ID},
		{"algorithm", sc.Algorithm},
		{"key", sc.Key},
		{"ttl", sc.TTL.D().String()},
		{"nodes", orDash(strings.Join(nodes, ", "))},
		{"clients", fmt.Sprintf("%d × %d cycles; work %s, think %s, start %s", sc.Clients.Count, sc.Clients.Cycles, sc.Clients.Work, sc.Clients.Think, sc.Clients.Start)},
		{"wait policy", fmt.Sprintf("retry every %s + up to %s jitter, attempts %s", sc.Wait.Delay.D(), sc.Wait.Jitter.D(), attempts(sc.Wait.Attempts))},
		{"resource", fmt.Sprintf("initial stock %d, token_check %s", sc.Resource.Initial, sc.Resource.TokenCheck)},
		{"duration", sc.Duration.D().String()},
		{"liveness bound", sc.LivenessBound.D().String()},
		{"seed (default)", fmt.Sprint(sc.Seed)},
	}
	if sc.Clients.Timeout > 0 {
		rows = append(rows, paramRow{"client timeout", sc.Clients.Timeout.D().String()})
	}
	if sc.Clients.LibraryRetries {
		rows = append(rows, paramRow{"library retries", "on (go-redis defaults)"})
	}
	if sc.Clients.CheckValidity {
		rows = append(rows, paramRow{"check validity", "clients skip the write once their lease expired"})
	}
	if sc.Network.Latency > 0 || sc.Network.Jitter > 0 {
		rows = append(rows, paramRow{"network", fmt.Sprintf("latency %s, jitter %s", sc.Network.Latency.D(), sc.Network.Jitter.D())})
	}
	for _, k := range sortedKeys(sc.Params) {
		rows = append(rows, paramRow{"param " + k, sc.Params[k]})
	}
	if len(sc.Compare) > 0 {
		rows = append(rows, paramRow{"compared with", strings.Join(sc.Compare, ", ")})
	}
	return rows
}

func attempts(n int) string {
	if n <= 0 {
		return "unlimited"
	}
	return fmt.Sprint(n)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// vizProbe is appended to porcupine's page: once drawn, it fits the
// drawing to the frame's width (porcupine sizes its SVG in pixels, which
// left a long history scrolling sideways inside a phone's frame; a viewBox
// lets it scale) and tells the report its height, how many boxes it drew
// and whether it fits (the frame is sandboxed, so the report cannot look
// inside).
const vizProbe = `<script>
function locklabVizFit(svg) {
  var w = Number(svg.getAttribute("width")), h = Number(svg.getAttribute("height"));
  if (w > 0 && h > 0 && !svg.getAttribute("viewBox")) { svg.setAttribute("viewBox", "0 0 " + w + " " + h); }
  // Without a viewBox, height:auto would collapse the drawing to 150 px.
  if (!svg.getAttribute("viewBox")) { return; }
  svg.style.maxWidth = "100%";
  svg.style.height = "auto";
}
function locklabVizPost() {
  var svg = document.querySelector("#canvas svg");
  // The drawing and porcupine's legend above it (an SVG 660 px wide).
  Array.prototype.forEach.call(document.querySelectorAll("body svg"), locklabVizFit);
  var legend = document.getElementById("legend");
  if (legend) { legend.style.maxWidth = "100%"; }
  // What still pokes out — the legend's "jump to" link overhanging its own
  // SVG, or a drawing fitted while a vertical scrollbar briefly took 15 px
  // before the report sized the frame — is clipped, not scrolled.
  document.documentElement.style.overflowX = "hidden";
  var boxes = svg ? svg.querySelectorAll("rect").length : 0;
  var h = Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
  var texts = svg ? Array.prototype.map.call(svg.querySelectorAll("text"), function (t) { return t.textContent; }) : [];
  var ms = texts.some(function (t) { return / ms\b/.test(t); });
  // Fits: every drawing of the view (the history and the legend) lies
  // within the frame's width.
  var vw = document.documentElement.clientWidth, fits = true;
  Array.prototype.forEach.call(document.querySelectorAll("body svg"), function (g) {
    if (g.getBoundingClientRect().right > vw + 1) { fits = false; }
  });
  parent.postMessage({ locklabViz: true, h: h, boxes: boxes, labels: texts.slice(0, 20).join(" "), ms: ms, fits: fits }, "*");
}
locklabVizPost();
window.addEventListener("resize", locklabVizPost);
// Porcupine draws again after a resize, on its own schedule: fit and tell
// again whenever its drawing changes.
if (window.MutationObserver && document.body) {
  var locklabVizPending = 0;
  new MutationObserver(function () {
    clearTimeout(locklabVizPending);
    locklabVizPending = setTimeout(locklabVizPost, 50);
  }).observe(document.body, { childList: true, subtree: true });
}
</script>`

// PorcupineFile is the shared porcupine viewer in a course directory.
const PorcupineFile = "porcupine.html"

// splitViz cuts porcupine's self-contained page into the viewer (its
// scripts and styles, the same for every history) and the history's data.
// ok is false when the page does not have the expected shape, and the
// caller keeps the whole page.
func splitViz(page string) (viewer, data string, ok bool) {
	const marker = "const data = "
	i := strings.Index(page, marker)
	if i < 0 {
		return "", "", false
	}
	j := strings.Index(page[i:], "render(data)")
	if j < 0 {
		return "", "", false
	}
	raw := strings.TrimSpace(page[i+len(marker) : i+j])
	// The checker names the client rows with a constant just before the
	// data (checker/visualize.go); it is the run's too, so it travels with
	// the data.
	cut, clients := i, "null"
	const names = "const locklabClients = "
	if k := strings.LastIndex(page[:i], names); k >= 0 {
		line, _, _ := strings.Cut(page[k+len(names):i], "\n")
		cut, clients = k, strings.TrimSpace(line)
	}
	data = `{"clients":` + clients + `,"data":` + raw + `}`
	viewer = page[:cut] + `
      window.addEventListener("message", function (e) {
        var d = e.data;
        if (d && d.porcupineData) {
          window.locklabClients = d.locklabClients;
          render(d.porcupineData);
          locklabVizPost();
        }
      });
    </script>
` + strings.Replace(vizProbe, "locklabVizPost();\n", "", 1) + `
  </body>
</html>
`
	return viewer, data, true
}

func withVizProbe(page string) string {
	if i := strings.LastIndex(page, "</body>"); i >= 0 {
		return page[:i] + vizProbe + page[i:]
	}
	return page + vizProbe
}

// resourceExplain says in words what a resource witness of each kind
// (checker's LostUpdate, DuplicateToken, StaleToken, …) means for the stock.
func resourceExplain(r *checker.ResourceWitness) string {
	w := r.Write
	switch r.Kind {
	case checker.DuplicateToken:
		return fmt.Sprintf("The resource accepted %s's write at %s and %s's write at %s under the same fencing token %d: the token no longer tells the writers apart.",
			r.Overwritten.Client, checker.Sec(r.Overwritten.At), w.Client, checker.Sec(w.At), w.FencingToken)
	case checker.StaleToken:
		return fmt.Sprintf("The resource had already seen token %d (%s's %s at %s), yet it accepted %s's write at %s with the older token %d: the fencing check let a stale holder through.",
			r.Overwritten.FencingToken, r.Overwritten.Client, r.Overwritten.Kind, checker.Sec(r.Overwritten.At), w.Client, checker.Sec(w.At), w.FencingToken)
	case checker.NotReadMinus1:
		return fmt.Sprintf("%s wrote %d after reading %d: one sale takes exactly one item, so the write does not follow from the read it was based on.",
			w.Client, w.Value, w.Based)
	case checker.StaleBase:
		return fmt.Sprintf("%s computed %d from %d, but the resource held %d when the write arrived and no accepted write had left %d: the value it worked from came from nowhere the history explains.",
			w.Client, w.Value, w.Based, r.Held, w.Based)
	case checker.ABA:
		return fmt.Sprintf("%s's write at %s was based on a read of %d; the stock was %d again when it arrived, but %s's write at %s came in between, so one sale was counted on a value that had changed and changed back.",
			w.Client, checker.Sec(w.At), w.Based, r.Held, r.Overwritten.Client, checker.Sec(r.Overwritten.At))
	}
	return fmt.Sprintf("%s computed %d from a read of %d, but by the time its write arrived (%s) the stock had already been changed by %s's write of %d at %s. The write was accepted and silently undid that sale: the stock ends at %d where a serial order gives %d.",
		w.Client, w.Value, w.Based, checker.Sec(w.At), r.Overwritten.Client, r.Overwritten.Value, checker.Sec(r.Overwritten.At), r.Final, r.Expected)
}
