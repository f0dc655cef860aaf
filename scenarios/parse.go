package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FieldError is a validation error that names a field of the file.
type FieldError struct {
	File  string
	Line  int
	Col   int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Col > 0 {
				fmt.Fprintf(&b, ":%d", e.Col)
			}
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (s *Scenario) fieldErr(field, format string, args ...any) *FieldError {
	line, col := posOf(s.root, field)
	return &FieldError{File: s.File, Line: line, Col: col, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var yamlLine = regexp.MustCompile(`line (\d+): `)

// Parse reads a scenario from YAML under the default limits. file names
// the source in errors.
func Parse(file string, data []byte) (*Scenario, error) {
	return ParseWith(file, data, DefaultLimits)
}

// ParseWith reads a scenario from YAML: the shape of the whole document is
// checked against the Scenario type, then its meaning (Validate), and every
// problem is reported at once (Errors).
func ParseWith(file string, data []byte, lim Limits) (*Scenario, error) {
	if lim.FileBytes > 0 && int64(len(data)) > lim.FileBytes {
		return nil, &FieldError{File: file, Msg: fmt.Sprintf("expected a scenario file of at most %d bytes (the limit; raise it with --max-file-size), found %d bytes", lim.FileBytes, len(data))}
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &FieldError{File: file, Line: 1 + bytes.Count(data[:bytes.IndexByte(data, 0)], []byte("\n")), Msg: "expected YAML text, found a NUL byte (a binary file?)"}
	}
	if err := checkUTF8(file, data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{File: file, Msg: "empty file; expected a scenario (see `locklab help scenario`)"}
		}
		return nil, yamlError(file, err)
	}
	if err := refuseLaterDocuments(file, dec); err != nil {
		return nil, err
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &FieldError{File: file, Msg: "empty file; expected a scenario (see `locklab help scenario`)"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &FieldError{File: file, Line: doc.Line, Col: doc.Column, Msg: "expected a mapping of scenario fields (id, algorithm, ttl, nodes, clients, faults, ...), found " + found(doc)}
	}
	shapeErrs := checkShape(file, doc)
	// The meaning pass runs after a shape error only when every one is an
	// unknown key: the known fields then decoded as written. A value the
	// shape pass refused (a number out of range) would decode to nonsense
	// and the meaning pass would report what follows from it.
	if slices.ContainsFunc(shapeErrs, func(e *FieldError) bool { return !strings.HasPrefix(e.Msg, "unknown field ") }) {
		return nil, shapeErrs.orNil()
	}
	s := &Scenario{File: file, root: &root, limits: &lim}
	if err := root.Decode(s); err != nil {
		if len(shapeErrs) > 0 {
			return nil, shapeErrs.orNil()
		}
		return nil, yamlError(file, err)
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil || len(shapeErrs) > 0 {
		return nil, bothPasses(shapeErrs, err)
	}
	return s, nil
}

// bothPasses joins the shape pass's errors (unknown keys)
// with the meaning pass's, so one unknown key does not hide the other
// problems of the file (issue 25). A field the shape pass already named is
// not named again, and the lines are in the file's order.
func bothPasses(shape Errors, validate error) error {
	all := slices.Clone(shape)
	named := map[string]bool{}
	for _, e := range shape {
		named[e.Field] = true
	}
	var more Errors
	if errors.As(validate, &more) {
		for _, e := range more {
			if !named[e.Field] {
				all = append(all, e)
			}
		}
	} else if validate != nil {
		var fe *FieldError
		if !errors.As(validate, &fe) {
			return errors.Join(append(shape.Unwrap(), validate)...)
		}
		if !named[fe.Field] {
			all = append(all, fe)
		}
	}
	slices.SortStableFunc(all, func(a, b *FieldError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return all.orNil()
}

// refuseLaterDocuments reads every document after the first, so that a
// third one (or a syntax error in it) is refused with its place instead of
// ignored: a file is one scenario, whole. Empty documents (a trailing ---)
// are allowed.
func refuseLaterDocuments(file string, dec *yaml.Decoder) error {
	for n := 2; ; n++ {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return yamlError(file, err)
		}
		if len(next.Content) > 0 && !(next.Content[0].Kind == yaml.ScalarNode && next.Content[0].ShortTag() == "!!null") {
			return &FieldError{File: file, Line: next.Content[0].Line, Col: next.Content[0].Column,
				Msg: fmt.Sprintf("expected one scenario per file, found YAML document %d (after ---); put each scenario in its own file", n)}
		}
	}
}

// checkUTF8 refuses bytes that are not UTF-8 (Latin-1, overlong forms)
// with the line and column of the first one: YAML 1.2 text is Unicode, and
// the parser's own message has no place.
func checkUTF8(file string, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return &FieldError{File: file, Line: line, Col: col,
				Msg: fmt.Sprintf("expected UTF-8 text, found the byte 0x%02x (Latin-1 or another encoding? save the file as UTF-8)", data[i])}
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return nil
}

// yamlError turns yaml.v3's messages into "file:line: message".
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	msg = strings.ReplaceAll(msg, "\n", " ")
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = strings.Replace(msg, m[0], "", 1)
	}
	msg = strings.ReplaceAll(msg, "in type scenarios.", "in ")
	msg = strings.ReplaceAll(msg, "in type faults.", "in ")
	return &FieldError{File: file, Line: line, Msg: Printable(msg, 200)}
}

// posOf finds the line and column of a dotted field path such as
// "faults[2].target" in the parsed document: the value's position, or the
// nearest parent found.
func posOf(root *yaml.Node, path string) (int, int) {
	if root == nil || len(root.Content) == 0 {
		return 0, 0
	}
	n := root.Content[0]
	line, col := n.Line, n.Column
	for _, part := range strings.Split(path, ".") {
		// A part is a name and any number of indices: groups[1][0].
		name, rest, _ := strings.Cut(part, "[")
		var idxs []int
		for rest != "" {
			num, after, ok := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if !ok || err != nil {
				break
			}
			idxs = append(idxs, i)
			rest = strings.TrimPrefix(after, "[")
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return line, col
		}
		var next *yaml.Node
		for k := 0; k+1 < len(n.Content); k += 2 {
			if n.Content[k].Value == name {
				line, col = n.Content[k].Line, n.Content[k].Column
				next = n.Content[k+1]
				break
			}
		}
		if next == nil {
			return line, col
		}
		n = next
		if n.Kind == yaml.ScalarNode {
			line, col = n.Line, n.Column
		}
		for _, idx := range idxs {
			for n.Kind == yaml.AliasNode && n.Alias != nil {
				n = n.Alias
			}
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line, col
			}
			n = n.Content[idx]
			line, col = n.Line, n.Column
		}
	}
	return line, col
}

// lineOf is posOf's line.
func lineOf(root *yaml.Node, path string) int {
	line, _ := posOf(root, path)
	return line
}
