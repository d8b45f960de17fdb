package testbody

import (
	"bufio"
	"bytes"
	"math"
	"regexp"
	"strconv"
	"strings"
)

var sampleLine = regexp.MustCompile(`^([^{ ]+)(\{[^}]*\})? (\S+)$`)

// Advance returns a later capture of the same engine: every counter and
// every histogram (buckets, count and sum) grows by frac of its value, so
// the window between src and the result holds traffic distributed exactly
// like everything src had seen. Gauges, _created series and
// process_start_time_seconds stay, so the pair is one process a window
// apart. A bucket's increase is rounded from its cumulative count, which
// keeps buckets cumulative and _count equal to +Inf.
func Advance(src []byte, frac float64) []byte {
	types := map[string]string{}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if name, typ, ok := strings.Cut(rest, " "); ok {
				types[name] = typ
			}
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil || !grows(m[1], types) {
			out.WriteString(line + "\n")
			continue
		}
		if strings.HasSuffix(m[1], "_sum") {
			v *= 1 + frac
		} else {
			v += math.Round(v * frac)
		}
		out.WriteString(m[1] + m[2] + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	return out.Bytes()
}

// grows reports whether a sample is cumulative: a counter's _total or a
// histogram's _bucket, _count and _sum.
func grows(name string, types map[string]string) bool {
	if strings.HasSuffix(name, "_created") {
		return false
	}
	for _, suffix := range []string{"_total", "_bucket", "_count", "_sum", ""} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		switch types[base] {
		case "counter":
			return true
		case "histogram":
			return suffix != "" && suffix != "_total"
		}
	}
	return false
}
