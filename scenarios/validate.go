package scenarios

// The validation pass. A scenario file is checked in two steps before
// anything runs, and every problem of the file is reported at once, one line
// each, as "file:line:col: field.path: expected ..., found ...":
//
//  1. shape: the YAML tree is walked against the Go type it decodes into
//     (Scenario), by reflection. The keys known at every level are the
//     yaml tags of the struct at that level, so a field added to any of
//     these structs is known (and its typos get a did-you-mean) with no
//     list to keep up to date. Scalars must have the exact type of their
//     field (no 2.5 for a count, no mapping for a name), and a field may
//     carry its own range in a `range:"lo..hi"` tag next to its type —
//     durations without one must lie in [0, MaxDuration].
//  2. meaning (Validate): names resolve against their kind (a replica's
//     master is a Redis node, a fault's target a client or node, a trigger's
//     op a message some backend sends), contradictions are refused, params
//     are checked against what the algorithm declares, and the limits hold.
//
// So a new field is validated by giving it a yaml tag (shape and type) and,
// if zero..MaxDuration or any integer is not its range, a range tag; only a
// name that refers to something else needs a line in Validate.

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/locklab/locklab/faults"
	"go.yaml.in/yaml/v3"
)

// MaxDuration bounds every duration a file may give (unless its field says
// otherwise): a year of true time, far beyond any run, and small enough that
// sums of a few of them never overflow int64 nanoseconds (292 years).
const MaxDuration = faults.MaxDuration

// maxYAMLNodes bounds the walk, so a file of aliases that expand to
// millions of nodes is refused instead of eating memory.
const maxYAMLNodes = 2_000_000

// Errors is every problem of one file, in file order. It unwraps to its
// elements, so errors.As finds the first *FieldError.
type Errors []*FieldError

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, fe := range e {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the elements.
func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, fe := range e {
		out[i] = fe
	}
	return out
}

// orNil returns nil for an empty list, so callers can compare with nil.
func (e Errors) orNil() error {
	if len(e) == 0 {
		return nil
	}
	slices.SortStableFunc(e, func(a, b *FieldError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return e
}

type shapeWalker struct {
	file  string
	errs  Errors
	nodes int
	// aliased is the value the walk reached through the alias node
	// aliasAt: an error about that value is placed at the alias, where
	// the file uses it, not at its anchor (a thousand aliases of one
	// anchor gave a thousand errors at one place).
	aliased, aliasAt *yaml.Node
}

func (w *shapeWalker) errorf(n *yaml.Node, path, format string, args ...any) {
	fe := &FieldError{File: w.file, Field: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		fe.Line, fe.Col = n.Line, n.Column
		if n == w.aliased && w.aliasAt != nil {
			fe.Line, fe.Col = w.aliasAt.Line, w.aliasAt.Column
		}
	}
	w.errs = append(w.errs, fe)
}

var (
	durationType = reflect.TypeOf(faults.Duration(0))
	rangeType    = reflect.TypeOf(Range{})
	nodeType     = reflect.TypeOf(Node{})
)

// found describes a YAML value for "found ..." in messages.
func found(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return strconv.Quote(Printable(n.Value, 40))
	}
	return "something else"
}

// Printable strips control characters (terminal escapes) from user text
// and shortens it to at most max runes (0: no limit), for messages and
// terminal output.
func Printable(s string, max int) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			continue
		}
		if max > 0 && n == max {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func human(d time.Duration) string { return faults.Human(d) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// yamlFields maps the yaml keys of a struct type to its fields, and lists
// the keys a file is told to use: a field tagged retired:"new" is a former
// spelling, still read (retired.go) but never offered.
func yamlFields(t reflect.Type) (map[string]reflect.StructField, []string) {
	m := map[string]reflect.StructField{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f
		if _, retired := f.Tag.Lookup("retired"); !retired {
			names = append(names, name)
		}
	}
	return m, names
}

// walk checks n against type t; field is the struct field n belongs to
// (for its range tag), nil for list elements and map values.
func (w *shapeWalker) walk(n *yaml.Node, t reflect.Type, path string, field *reflect.StructField) {
	w.nodes++
	if w.nodes == maxYAMLNodes {
		w.errorf(n, path, "expected at most %d YAML values, found more (aliases expanding too far?)", maxYAMLNodes)
	}
	if w.nodes >= maxYAMLNodes {
		return
	}
	if n.Kind == yaml.AliasNode {
		defer func(aliased, at *yaml.Node) { w.aliased, w.aliasAt = aliased, at }(w.aliased, w.aliasAt)
		w.aliasAt = n
	}
	for depth := 0; n.Kind == yaml.AliasNode; depth++ {
		if n.Alias == nil || depth > 100 {
			w.errorf(n, path, "expected a value, found a broken alias")
			return
		}
		n = n.Alias
		w.aliased = n
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // left out; Validate says when it is needed
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case durationType:
		w.duration(n, path, field)
		return
	case rangeType:
		w.durationRange(n, path, field)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkStruct(n, t, path, field)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.errorf(n, path, "expected a list, found %s", found(n))
			return
		}
		for i, e := range n.Content {
			w.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), nil)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.errorf(n, path, "expected a mapping, found %s", found(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				w.errorf(k, path, "expected a name as key, found %s", found(k))
				continue
			}
			w.walk(v, t.Elem(), join(path, Printable(k.Value, 40)), nil)
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n, path, "expected text, found %s", found(n))
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			w.errorf(n, path, "expected true or false, found %s", found(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.integer(n, t, path, field)
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
			w.errorf(n, path, "expected a number, found %s", found(n))
			return
		}
		if _, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64); err != nil && n.ShortTag() == "!!float" && !isSpecialFloat(n.Value) {
			w.errorf(n, path, "expected a number, found %s", found(n))
		}
	}
}

// walkStruct checks a mapping against struct type t: every key a field of
// it (with a did-you-mean), merge keys ("<<") as this level's keys.
func (w *shapeWalker) walkStruct(n *yaml.Node, t reflect.Type, path string, field *reflect.StructField) {
	if n.Kind == yaml.ScalarNode && t == nodeType {
		return // a bare node name
	}
	fields, names := yamlFields(t)
	if n.Kind != yaml.MappingNode {
		w.errorf(n, path, "expected a mapping with the keys %s, found %s", strings.Join(names, ", "), found(n))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.errorf(k, path, "expected a key name, found %s", found(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			// "<<: *defaults" merges another mapping (or a list of
			// them) into this one: its keys are checked as this
			// level's.
			if v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					w.walk(e, t, path, field)
				}
			} else {
				w.walk(v, t, path, field)
			}
			continue
		}
		f, ok := fields[k.Value]
		if !ok {
			msg := fmt.Sprintf("unknown field %q; expected one of %s", Printable(k.Value, 40), strings.Join(names, ", "))
			if s := DidYouMean(k.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			w.errorf(k, join(path, Printable(k.Value, 40)), "%s", msg)
			continue
		}
		w.walk(v, f.Type, join(path, k.Value), &f)
	}
}

func isSpecialFloat(s string) bool {
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case ".inf", ".nan":
		return true
	}
	return false
}

// integer checks a whole number of t's size, and its range tag (default:
// >= 0, since counts, cycles and limits are never negative).
func (w *shapeWalker) integer(n *yaml.Node, t reflect.Type, path string, field *reflect.StructField) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		w.errorf(n, path, "expected a whole number, found %s", found(n))
		return
	}
	var v float64
	var iv int64
	exact := false
	lo, hi := intBounds(t)
	unsigned := lo == 0 && t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64
	if n.ShortTag() == "!!int" {
		text := strings.ReplaceAll(n.Value, "_", "")
		if unsigned {
			_, err := strconv.ParseUint(text, 0, t.Bits())
			if err != nil {
				w.errorf(n, path, "expected a whole number between 0 and %s, found %s", fmtBound(hi), found(n))
			}
			return // every uint of the field's size is in range
		}
		var err error
		if iv, err = strconv.ParseInt(text, 0, 64); err != nil {
			lo, hi := rangeOf(lo, hi, field)
			w.errorf(n, path, "expected %s, found %s", wholeRange(lo, hi), found(n))
			return
		}
		exact = true
		v = float64(iv)
	} else {
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
			w.errorf(n, path, "expected a whole number, found %s", found(n))
			return
		}
		v = f
	}
	lo, hi = rangeOf(lo, hi, field)
	if v < lo || v > hi || (exact && (float64(iv) < lo || float64(iv) > hi)) {
		w.errorf(n, path, "expected %s, found %s", wholeRange(lo, hi), found(n))
	}
}

// rangeOf is a field's range: its range tag, else the type's bounds.
func rangeOf(lo, hi float64, field *reflect.StructField) (float64, float64) {
	if field != nil {
		if r := field.Tag.Get("range"); r != "" {
			a, b, _ := strings.Cut(r, "..")
			lo, _ = strconv.ParseFloat(a, 64)
			hi, _ = strconv.ParseFloat(b, 64)
		}
	}
	return lo, hi
}

// wholeRange says which whole numbers are accepted. A bound that is only
// the integer type's limit is left out: "between 0 and
// 9223372036854775807" read as a limit nobody chose (issue 32); it is
// "a whole number >= 0".
func wholeRange(lo, hi float64) string {
	noLo, noHi := lo <= -math.Pow(2, 63), hi >= math.Pow(2, 63)-1
	switch {
	case noLo && noHi:
		return "a whole number of 64 bits, from " + strconv.FormatInt(math.MinInt64, 10) + " to " + strconv.FormatInt(math.MaxInt64, 10)
	case noHi:
		return "a whole number >= " + fmtBound(lo)
	case noLo:
		return "a whole number <= " + fmtBound(hi)
	}
	return fmt.Sprintf("a whole number between %s and %s", fmtBound(lo), fmtBound(hi))
}

// fmtBound prints a bound as the whole number it stands for. The limits of
// the integer types are not exact in float64 (2^63-1 rounds up to 2^63), so
// they are spelled out rather than printed as 9223372036854776000.
func fmtBound(f float64) string {
	switch {
	case f >= math.Pow(2, 64)-1:
		return strconv.FormatUint(math.MaxUint64, 10)
	case f >= math.Pow(2, 63)-1:
		return strconv.FormatInt(math.MaxInt64, 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func intBounds(t reflect.Type) (float64, float64) {
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return 0, math.Pow(2, float64(t.Bits())) - 1
	}
	return 0, math.Pow(2, float64(t.Bits()-1)) - 1
}

// durationBounds reads a field's range tag ("-24h..24h"), defaulting to
// [0, MaxDuration].
func durationBounds(field *reflect.StructField, def time.Duration) (time.Duration, time.Duration) {
	lo, hi := time.Duration(0), def
	if field != nil {
		if r := field.Tag.Get("range"); r != "" {
			a, b, _ := strings.Cut(r, "..")
			if d, err := time.ParseDuration(a); err == nil {
				lo = d
			}
			if d, err := time.ParseDuration(b); err == nil {
				hi = d
			}
		}
	}
	return lo, hi
}

func (w *shapeWalker) duration(n *yaml.Node, path string, field *reflect.StructField) {
	if n.Kind != yaml.ScalarNode {
		w.errorf(n, path, "expected a duration such as 250ms or 10s, found %s", found(n))
		return
	}
	lo, hi := durationBounds(field, MaxDuration)
	d, err := faults.ParseDuration(n.Value)
	if err != nil {
		w.errorf(n, path, "expected a duration between %s and %s such as 250ms or 10s, found %s", human(lo), human(hi), found(n))
		return
	}
	if d.D() < lo || d.D() > hi {
		w.errorf(n, path, "expected a duration between %s and %s, found %s", human(lo), human(hi), found(n))
	}
}

// Ranges (work, think, start) default to [0, 24h] at both ends.
func (w *shapeWalker) durationRange(n *yaml.Node, path string, field *reflect.StructField) {
	if n.Kind != yaml.ScalarNode {
		w.errorf(n, path, "expected a duration or a range such as 50ms..150ms, found %s", found(n))
		return
	}
	lo, hi := durationBounds(field, 24*time.Hour)
	r, err := ParseRange(n.Value)
	if err != nil {
		w.errorf(n, path, "expected a duration or a range min..max such as 50ms..150ms with 0 <= min <= max, found %s", found(n))
		return
	}
	if r.Min < lo || r.Max > hi {
		w.errorf(n, path, "expected durations between %s and %s, found %s", human(lo), human(hi), found(n))
	}
}

// DidYouMean returns the candidate closest to s by edit distance, if it is
// close enough to be a typo ("" otherwise).
func DidYouMean(s string, candidates []string) string { return faults.Closest(s, candidates) }

// checkShape walks a parsed document against Scenario.
func checkShape(file string, doc *yaml.Node) Errors {
	w := &shapeWalker{file: file}
	w.walk(doc, reflect.TypeOf(Scenario{}), "", nil)
	return w.errs
}
