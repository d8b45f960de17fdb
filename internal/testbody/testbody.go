// Package testbody holds the tests' exposition helpers: large synthetic
// engine expositions built for benchmarks from the structure of a real
// capture, misbehaving engines, fuzz seeds, gathered families as text,
// and histograms of observations.
package testbody

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// Multiply turns a vLLM exposition into one that serves models copies of
// its model (as LoRA adapters are served, each under its own model_name).
// Only data-parallel rank 0 is kept; family order, HELP and TYPE lines and
// values are those of src.
func Multiply(src []byte, model string, models int) []byte {
	type family struct {
		meta    []string
		samples []string
	}
	var fams []*family
	var cur *family
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "), strings.HasPrefix(line, "# TYPE ") && (cur == nil || len(cur.samples) > 0):
			cur = &family{meta: []string{line}}
			fams = append(fams, cur)
		case strings.HasPrefix(line, "# TYPE "):
			cur.meta = append(cur.meta, line)
		case strings.HasPrefix(line, "#") || line == "" || strings.Contains(line, `engine="1"`):
		case cur != nil:
			cur.samples = append(cur.samples, line)
		}
	}
	old := fmt.Sprintf("model_name=%q", model)
	var out bytes.Buffer
	for _, f := range fams {
		for _, m := range f.meta {
			out.WriteString(m + "\n")
		}
		for i := range models {
			repl := fmt.Sprintf("model_name=%q", fmt.Sprintf("%s-lora-%03d", model, i))
			for _, s := range f.samples {
				out.WriteString(strings.Replace(s, old, repl, 1) + "\n")
			}
		}
	}
	return out.Bytes()
}

// Samples counts the sample lines of an exposition.
func Samples(body []byte) int {
	n := 0
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}
