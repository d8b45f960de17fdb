package testbody

import (
	"bytes"
	"fmt"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Text encodes gathered families in the text exposition format, as the
// registry's handler would serve them.
func Text(tb testing.TB, mfs []*dto.MetricFamily) string {
	tb.Helper()
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			tb.Fatal(err)
		}
	}
	return b.String()
}

// FirstDiff shows where two texts part: the byte offset and 80 bytes
// around it in each.
func FirstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-80)
	return fmt.Sprintf("at byte %d: %q vs %q", i, a[from:min(len(a), i+80)], b[from:min(len(b), i+80)])
}
