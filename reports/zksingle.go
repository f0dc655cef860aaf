package reports

import (
	"strings"

	"github.com/locklab/locklab/sim/event"
)

// The old single-server ZooKeeper model (sim/zk) writes its facts as
// untyped notes; it retires with issue 21 item 5, and this file with it.
// It is the one reader left that matches on trace wording, and only on
// the notes of that model (TestReadersDoNotMatchTraceText allows this file
// alone).

// retiringZKState reads a single-server client's "zk state S" note.
func retiringZKState(e *event.Event) (string, bool) {
	return strings.CutPrefix(e.Note, "zk state ")
}

// deriveZK reads one line of the ZooKeeper server.
func deriveZK(m *mechanism, e *event.Event, creates *[]struct{ client, prefix string }, idx map[string]int) {
	text := e.Note
	if e.Kind == event.CommandExecuted {
		text = e.Command + " → " + e.Reply
	}
	switch {
	case strings.HasPrefix(text, "CREATE ") && strings.Contains(text, "→ created "):
		i := strings.Index(text, "→ created ")
		path := strings.Fields(text[i+len("→ created "):])[0]
		who := ""
		for k := len(*creates) - 1; k >= 0; k-- {
			if strings.HasPrefix(path, (*creates)[k].prefix) {
				who = (*creates)[k].client
				*creates = append((*creates)[:k:k], (*creates)[k+1:]...)
				break
			}
		}
		if who == "" {
			return // a persistent parent, not a lock node
		}
		short := path[strings.LastIndex(path, "/")+1:]
		if j := strings.LastIndex(short, "-"); j >= 0 && j+1 < len(short) {
			short = short[j+1:]
		}
		if s := strings.TrimLeft(short, "0"); s != "" {
			short = s
		} else if short != "" {
			short = "0"
		}
		idx[path] = len(m.Znodes)
		m.Znodes = append(m.Znodes, znodeSpan{Path: path, Short: short, Owner: who, From: e.At})
	case strings.HasPrefix(text, "DELETE ") && strings.HasSuffix(text, "→ ok"):
		path := strings.Fields(text)[1]
		if i, ok := idx[path]; ok && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = e.At, "deleted"
		}
	case strings.HasPrefix(text, "delete ephemeral "):
		path := strings.Fields(text)[2]
		if i, ok := idx[path]; ok && m.Znodes[i].End == "" {
			m.Znodes[i].To, m.Znodes[i].End = e.At, "session expired"
		}
	case strings.HasPrefix(text, "notify "):
		f := strings.Fields(text)
		if len(f) >= 2 {
			ev := ""
			if i := strings.Index(text, "): "); i >= 0 {
				ev = text[i+3:]
			}
			m.Notifies = append(m.Notifies, notify{Client: f[1], At: e.At, Event: ev})
		}
	case strings.HasPrefix(text, "session ") && strings.Contains(text, " expired"):
		f := strings.Fields(text)
		if len(f) >= 4 && f[2] == "of" {
			m.Expiries = append(m.Expiries, sessionExpiry{Client: f[3], At: e.At})
		}
	}
}
