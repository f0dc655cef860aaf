package reports

import (
	"bytes"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// EChartsEnv names the environment variable that points at a local copy of
// echarts.min.js. "off" turns the interactive charts off; empty means the
// default cache path (DefaultEChartsPath).
const EChartsEnv = "LOCKLAB_ECHARTS"

// FetchHint is what a report says when it has no local ECharts copy.
const FetchHint = "bash scripts/fetch-echarts.sh"

// DefaultEChartsPath is where scripts/fetch-echarts.sh leaves echarts.min.js:
// $LOCKLAB_CACHE/echarts.min.js, else the user cache directory
// ($XDG_CACHE_HOME or ~/.cache) under locklab/.
func DefaultEChartsPath() string {
	if d := os.Getenv("LOCKLAB_CACHE"); d != "" {
		return filepath.Join(d, "echarts.min.js")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "locklab", "echarts.min.js")
}

// echartsAsset is the local ECharts library, ready to inline, or the reason
// there is none.
type echartsAsset struct {
	js   template.JS
	note string // why the interactive charts are missing ("" when present)
	raw  []byte // the file as read, to write beside a course's pages
	src  string // a relative URL to load it from instead of inlining it
	// shared: the page is part of a directory with locklab.css and
	// locklab.js (a course), which it links instead of inlining.
	shared bool
}

func (a echartsAsset) ok() bool { return a.js != "" || a.src != "" }

// loadECharts finds the local ECharts copy. It never fails: without a copy,
// a report shows its SVG timeline and a note on how to get the charts.
func loadECharts() echartsAsset {
	p := strings.TrimSpace(os.Getenv(EChartsEnv))
	switch strings.ToLower(p) {
	case "off", "none", "0", "false":
		return echartsAsset{note: "Interactive charts are turned off (" + EChartsEnv + "=" + p + "). To get them, unset it and run `" + FetchHint + "`. The timeline above is plain SVG and needs no JavaScript."}
	}
	explicit := p != ""
	if !explicit {
		p = DefaultEChartsPath()
	}
	data, err := os.ReadFile(p)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		where := "no local copy of ECharts was found in the cache (~/.cache/locklab/echarts.min.js)"
		if explicit {
			where = EChartsEnv + " does not name a readable, non-empty file"
		}
		return echartsAsset{note: "Interactive charts are not included: " + where +
			". Run `" + FetchHint + "` (it uses `npm pack echarts@5`) and write the report again. " +
			"The timeline above is plain SVG and needs no JavaScript."}
	}
	return echartsAsset{js: template.JS(scriptSafe(data)), raw: data}
}

var (
	closeScript = regexp.MustCompile(`(?i)</(script)`)
	openComment = regexp.MustCompile(`<!--`)
)

// scriptSafe keeps a trusted JavaScript file from ending the <script>
// element it is inlined into: "</script" becomes "<\/script" and "<!--"
// becomes "<\!--", which mean the same inside JavaScript strings, regular
// expressions and comments.
func scriptSafe(js []byte) string {
	js = closeScript.ReplaceAll(js, []byte(`<\/$1`))
	js = openComment.ReplaceAll(js, []byte(`<\!--`))
	return string(js)
}
