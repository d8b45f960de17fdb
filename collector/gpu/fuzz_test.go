package gpu

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// FuzzParseDCGMExporter feeds the dcgm-exporter parser arbitrary bodies,
// seeded with every capture under testdata/dcgm-exporter. It must not
// panic, must give the same devices for the same body twice (no map order
// leaking into the result), and every device it returns has a
// non-negative index, is listed once, and has no NaN or infinite reading.
func FuzzParseDCGMExporter(f *testing.F) {
	for _, b := range testbody.Files(f, "testdata/dcgm-exporter/*.prom") {
		f.Add(b)
	}
	// Found by this target: a negative gpu label made device -1, and a NaN
	// power reading was kept as a value.
	f.Add([]byte("DCGM_FI_DEV_POWER_USAGE{gpu=\"-1\",UUID=\"GPU-a\"} 1\n"))
	f.Add([]byte("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} NaN\nDCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\"} +Inf\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := parseDCGMExporter(bytes.NewReader(body))
		if err != nil {
			return
		}
		b, err := parseDCGMExporter(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("parsed once, then failed: %v", err)
		}
		if x, y := fmt.Sprintf("%+v", a.Devices), fmt.Sprintf("%+v", b.Devices); x != y {
			t.Fatalf("the same body parsed twice differs:\n%s\n%s", x, y)
		}
		seen := map[string]bool{}
		for _, d := range a.Devices {
			if d.Index < 0 || seen[d.Key()] {
				t.Fatalf("device %s negative or repeated in %+v", d.Key(), a.Devices)
			}
			seen[d.Key()] = true
			for _, v := range []Value{d.PowerW, d.PowerLimitW, d.EnergyJ, d.SMClockHz, d.SMClockMaxHz, d.Utilization, d.MemUsedB, d.MemTotalB} {
				if v.OK && (math.IsNaN(v.V) || math.IsInf(v.V, 0)) {
					t.Fatalf("device %s has a reading of %v", d.Key(), v.V)
				}
			}
		}
	})
}
