package reports

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// A minimal Chrome DevTools protocol client over --remote-debugging-pipe:
// Chromium reads commands on its file descriptor 3 and writes replies and
// events on 4, each a JSON object ended by a NUL byte. That is all the
// browser test needs to set an exact viewport (390 px is below headless
// Chromium's smallest window), run the probe, collect console messages and
// take full-page screenshots — no websocket, no third-party driver.

type cdpMessage struct {
	ID        int                       `json:"id,omitempty"`
	Method    string                    `json:"method,omitempty"`
	Params    json.RawMessage           `json:"params,omitempty"`
	Result    json.RawMessage           `json:"result,omitempty"`
	Error     *struct{ Message string } `json:"error,omitempty"`
	SessionID string                    `json:"sessionId,omitempty"`
}

type cdpBrowser struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	w      io.WriteCloser
	stderr bytes.Buffer

	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpMessage
	events  []cdpMessage
	notify  chan struct{}
	closed  chan struct{}
}

// startCDP starts one headless Chromium with a fresh profile, driven over
// the pipe. It is stopped when the test ends.
func startCDP(t *testing.T, path string) *cdpBrowser {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	toChrome, chromeIn, err := os.Pipe() // Chromium reads toChrome (its fd 3)
	if err != nil {
		t.Fatal(err)
	}
	chromeOut, fromChrome, err := os.Pipe() // Chromium writes fromChrome (its fd 4)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
		"about:blank",
	}
	cmd := exec.CommandContext(ctx, path, args...)
	b := &cdpBrowser{cmd: cmd, cancel: cancel, w: chromeIn, waiting: map[int]chan cdpMessage{}, notify: make(chan struct{}, 1), closed: make(chan struct{})}
	cmd.ExtraFiles = []*os.File{toChrome, fromChrome}
	cmd.Stderr = &b.stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	toChrome.Close()
	fromChrome.Close()
	go b.read(chromeOut)
	t.Cleanup(func() {
		b.call("", "Browser.close", nil) //nolint:errcheck // it may already be gone
		chromeIn.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	return b
}

func (b *cdpBrowser) read(r io.Reader) {
	defer close(b.closed)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.waiting[m.ID]; ok {
				delete(b.waiting, m.ID)
				ch <- m
			}
		} else {
			b.events = append(b.events, m)
			select {
			case b.notify <- struct{}{}:
			default:
			}
		}
		b.mu.Unlock()
	}
}

// call sends one command (to the browser when session is empty) and waits
// for its reply. The timeout only guards against a hung browser.
func (b *cdpBrowser) call(session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, _ := json.Marshal(msg)
	if _, err := b.w.Write(append(data, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-b.closed:
		return nil, fmt.Errorf("%s: chromium went away\n%s", method, tail(b.stderr.String(), 1500))
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("%s: no reply from chromium", method)
	}
}

// waitEvent waits for an event of a session and returns its parameters.
func (b *cdpBrowser) waitEvent(session, method string, from int) (json.RawMessage, error) {
	deadline := time.After(60 * time.Second)
	for {
		b.mu.Lock()
		for i := from; i < len(b.events); i++ {
			if e := b.events[i]; e.Method == method && e.SessionID == session {
				b.mu.Unlock()
				return e.Params, nil
			}
		}
		b.mu.Unlock()
		select {
		case <-b.notify:
		case <-b.closed:
			return nil, fmt.Errorf("waiting for %s: chromium went away", method)
		case <-deadline:
			return nil, fmt.Errorf("waiting for %s: timed out", method)
		}
	}
}

func (b *cdpBrowser) eventCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.events)
}

// consoleSince lists the console messages, uncaught exceptions and error
// log entries of a session since event index from.
func (b *cdpBrowser) consoleSince(session string, from int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.events[from:] {
		if e.SessionID != session {
			continue
		}
		switch e.Method {
		case "Runtime.consoleAPICalled":
			var p struct {
				Type string
				Args []struct {
					Value       any
					Description string
				}
			}
			json.Unmarshal(e.Params, &p)
			var parts []string
			for _, a := range p.Args {
				if a.Value != nil {
					parts = append(parts, fmt.Sprint(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			out = append(out, "console."+p.Type+": "+strings.Join(parts, " "))
		case "Runtime.exceptionThrown":
			var p struct {
				ExceptionDetails struct {
					Text      string
					Exception struct{ Description string }
				}
			}
			json.Unmarshal(e.Params, &p)
			out = append(out, "exception: "+p.ExceptionDetails.Text+" "+p.ExceptionDetails.Exception.Description)
		case "Log.entryAdded":
			var p struct {
				Entry struct{ Level, Source, Text, URL string }
			}
			json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, "log "+p.Entry.Level+" ("+p.Entry.Source+"): "+p.Entry.Text+" "+p.Entry.URL)
			}
		}
	}
	return out
}

// cdpPage is one tab.
type cdpPage struct {
	b        *cdpBrowser
	session  string
	targetID string
}

// newPage opens a tab with a viewport of width × height CSS pixels.
func (b *cdpBrowser) newPage(width, height int) (*cdpPage, error) {
	res, err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return nil, err
	}
	var tg struct{ TargetID string }
	json.Unmarshal(res, &tg)
	res, err = b.call("", "Target.attachToTarget", map[string]any{"targetId": tg.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var at struct{ SessionID string }
	json.Unmarshal(res, &at)
	p := &cdpPage{b: b, session: at.SessionID, targetID: tg.TargetID}
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if _, err := b.call(p.session, m, nil); err != nil {
			return nil, err
		}
	}
	_, err = b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600,
	})
	return p, err
}

// navigate loads url and waits for its load event.
func (p *cdpPage) navigate(url string) error {
	from := p.b.eventCount()
	if _, err := p.b.call(p.session, "Page.navigate", map[string]any{"url": url}); err != nil {
		return err
	}
	_, err := p.b.waitEvent(p.session, "Page.loadEventFired", from)
	return err
}

// eval evaluates a JavaScript expression (awaiting a promise) and returns
// its value as a string.
func (p *cdpPage) eval(expr string) (string, error) {
	res, err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return "", err
	}
	var r struct {
		Result           struct{ Value any }
		ExceptionDetails *struct{ Text string }
	}
	json.Unmarshal(res, &r)
	if r.ExceptionDetails != nil {
		return "", fmt.Errorf("evaluate: %s", r.ExceptionDetails.Text)
	}
	return fmt.Sprint(r.Result.Value), nil
}

// screenshot writes a PNG of the whole page (up to maxHeight pixels) to
// file.
func (p *cdpPage) screenshot(file string, width, maxHeight int) error {
	h, err := p.eval("document.documentElement.scrollHeight")
	if err != nil {
		return err
	}
	var height int
	fmt.Sscan(h, &height)
	height = min(max(height, 100), maxHeight)
	res, err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{
		"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
	})
	if err != nil {
		return err
	}
	var r struct{ Data string }
	json.Unmarshal(res, &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return err
	}
	return os.WriteFile(file, png, 0o644)
}

func (p *cdpPage) close() {
	p.b.call("", "Target.closeTarget", map[string]any{"targetId": p.targetID}) //nolint:errcheck // best effort
}

// pdfPages prints the page as the browser would (A4, the page's own @page
// rules) and counts the PDF's pages.
func (p *cdpPage) pdfPages() (int, error) {
	res, err := p.b.call(p.session, "Page.printToPDF", map[string]any{
		"paperWidth": 8.27, "paperHeight": 11.69, "preferCSSPageSize": true, "printBackground": true,
	})
	if err != nil {
		return 0, err
	}
	var r struct{ Data string }
	json.Unmarshal(res, &r)
	pdf, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return 0, err
	}
	return len(pdfPage.FindAll(pdf, -1)), nil
}

// pdfPage matches a page object of a PDF (not the /Pages tree).
var pdfPage = regexp.MustCompile(`/Type\s*/Page[^s]`)
