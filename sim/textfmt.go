package sim

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// label is one label pair of a sample.
type label struct{ k, v string }

// expo builds a Prometheus text (0.0.4) exposition in memory.
type expo struct {
	b strings.Builder
	// num formats sample values and le bounds the way the engine does.
	num func(float64) string
	// sortLabels writes labels in key order, as prometheus_client does.
	sortLabels bool
}

func (x *expo) family(name, help, typ string) {
	x.b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

func (x *expo) sample(name string, labels []label, v float64) {
	x.raw(name, labels, x.num(v))
}

func (x *expo) raw(name string, labels []label, v string) {
	x.b.WriteString(name)
	if len(labels) > 0 {
		if x.sortLabels {
			labels = slices.Clone(labels)
			slices.SortStableFunc(labels, func(a, b label) int { return strings.Compare(a.k, b.k) })
		}
		x.b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				x.b.WriteByte(',')
			}
			x.b.WriteString(l.k + `="` + escapeLabel(l.v) + `"`)
		}
		x.b.WriteByte('}')
	}
	x.b.WriteString(" " + v + "\n")
}

// histogram writes the bucket, count and sum series of h.
func (x *expo) histogram(name string, labels []label, h *hist) {
	cum := h.cumulative()
	for i, bound := range h.bounds {
		x.sample(name+"_bucket", append(slices.Clone(labels), label{"le", x.num(bound)}), float64(cum[i]))
	}
	x.sample(name+"_bucket", append(slices.Clone(labels), label{"le", "+Inf"}), float64(h.count))
	x.sample(name+"_count", labels, float64(h.count))
	x.sample(name+"_sum", labels, h.sum)
}

func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// pyFloat formats like prometheus_client's floatToGoString: Python's
// repr, with Go-style exponents from 1e+06 up.
func pyFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	s := pyRepr(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mant := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mant + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// pyRepr is Python's repr of a float: the shortest round-trip digits,
// positional from 1e-4 up to 1e16, with at least one decimal.
func pyRepr(v float64) string {
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	exp := math.Floor(math.Log10(math.Abs(v)))
	e := strconv.FormatFloat(v, 'e', -1, 64)
	if i := strings.IndexByte(e, 'e'); i > 0 {
		if n, err := strconv.Atoi(e[i+1:]); err == nil {
			exp = float64(n)
		}
	}
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsRune(s, '.') {
		s += ".0"
	}
	return s
}

// cppFloat formats like a C++ ostream with its default precision, as
// llama.cpp's metrics endpoint prints every value.
func cppFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// goInt formats the integer fields dcgm-exporter prints.
func goInt(v float64) string { return strconv.FormatInt(int64(math.Round(v)), 10) }

// goFixed formats dcgm-exporter's double fields.
func goFixed(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
