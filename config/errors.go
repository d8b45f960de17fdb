package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is one problem in a configuration file, with the line it is on.
type Error struct {
	Line int    // 1-based; 0 when unknown
	Path string // e.g. targets[1].url
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one file, in file order.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// yamlLine matches the "line N: msg" items of a yaml TypeError.
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// fromYAML turns a yaml decoding error into Errors, one per problem.
func fromYAML(err error) Errors {
	var out Errors
	if te, ok := err.(*yaml.TypeError); ok {
		for _, m := range te.Errors {
			out = append(out, lineError(m))
		}
		return out
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	return Errors{lineError(msg)}
}

// unknownField matches yaml's unknown-field error.
var unknownField = regexp.MustCompile(`^field (\S+) not found in type config\.(\w+)$`)

// sections names, for an unknown key, where it was found: the types the
// file decodes into.
var sections = map[string]struct {
	where string
	typ   reflect.Type
}{
	"Config":         {"at the top level", reflect.TypeFor[Config]()},
	"TargetDefaults": {"in defaults", reflect.TypeFor[TargetDefaults]()},
	"Target":         {"in a target", reflect.TypeFor[Target]()},
	"SLO":            {"in an SLO", reflect.TypeFor[SLO]()},
	"SLOMatch":       {"in match", reflect.TypeFor[SLOMatch]()},
	"Objective":      {"in an objective", reflect.TypeFor[Objective]()},
	"Pricing":        {"in pricing", reflect.TypeFor[Pricing]()},
}

// yamlKeys lists the keys a struct type takes, in field order.
func yamlKeys(t reflect.Type) string {
	var keys []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return strings.Join(keys, ", ")
}

// unknownThreshold matches yaml's unknown-field error inside diagnosis.thresholds.
var unknownThreshold = regexp.MustCompile(`^field (\S+) not found in type config\.DiagnosisThresholds$`)

func lineError(msg string) *Error {
	e := &Error{Msg: msg}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
	}
	if m := unknownField.FindStringSubmatch(e.Msg); m != nil {
		if m[2] == "Objectives" {
			e.Msg = fmt.Sprintf("unknown objective %q (use ttft, tpot, itl, e2e, queue or error)", m[1])
		} else if sec, ok := sections[m[2]]; ok {
			e.Msg = fmt.Sprintf("unknown key %q %s (use %s)", m[1], sec.where, yamlKeys(sec.typ))
		}
	}
	if m := unknownThreshold.FindStringSubmatch(e.Msg); m != nil {
		e.Msg = fmt.Sprintf("unknown diagnosis threshold %q (docs/failure-modes.md lists them)", m[1])
	}
	return e
}

// locator finds the line of a path in the parsed YAML tree, so that a
// validation error can point at the offending key.
type locator struct{ root *yaml.Node }

// line returns the line of the node at path (map keys as strings, sequence
// indexes as ints), or of the deepest ancestor that exists.
func (l locator) line(path ...any) int {
	n := l.root
	if n == nil {
		return 0
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		next, keyLine := child(n, p)
		if next == nil {
			if keyLine > 0 {
				return keyLine
			}
			return line
		}
		n, line = next, next.Line
		if keyLine > 0 {
			line = keyLine
		}
	}
	return line
}

func child(n *yaml.Node, p any) (*yaml.Node, int) {
	switch k := p.(type) {
	case string:
		if n.Kind != yaml.MappingNode {
			return nil, 0
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	case int:
		if n.Kind == yaml.SequenceNode && k >= 0 && k < len(n.Content) {
			return n.Content[k], 0
		}
	}
	return nil, 0
}
