package diagnosis

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
)

// h200Reading is one line of testdata/h200-gemm-at-power-limit.csv.
type h200Reading struct {
	powerW, limitW, smMHz, smMaxMHz float64
	reasons                         uint64
}

// readH200 reads the real H200's NVML readings, in file order.
func readH200(t *testing.T) []h200Reading {
	t.Helper()
	f, err := os.Open("testdata/h200-gemm-at-power-limit.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []h200Reading
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "t_s,") {
			continue
		}
		c := strings.Split(line, ",")
		if len(c) != 7 {
			t.Fatalf("line %q: %d fields", line, len(c))
		}
		num := func(s string) float64 {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			return v
		}
		mask, err := strconv.ParseUint(c[5], 0, 64)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, h200Reading{num(c[1]), num(c[2]), num(c[3]), num(c[4]), mask})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// loaded keeps the readings taken under the matrix products: those with
// sw_power_cap set (the file's idle readings have no reason set).
func loaded(rs []h200Reading) []h200Reading {
	var out []h200Reading
	for _, r := range rs {
		if r.reasons&swPowerCap != 0 {
			out = append(out, r)
		}
	}
	return out
}

// device turns a reading into what the NVML backend reports; limitW
// overrides the enforced limit when > 0 and defaultW is the board's
// default (0: unknown, as dcgm-exporter's default counters leave it).
func (r h200Reading) device(limitW, defaultW float64) []gpu.Device {
	d := gpu.Device{Index: 0, UUID: "GPU-h200", SMClockHz: gpu.Some(r.smMHz * 1e6), SMClockMaxHz: gpu.Some(r.smMaxMHz * 1e6),
		PowerW: gpu.Some(r.powerW), PowerLimitW: gpu.Some(r.limitW), Throttle: gpu.Reasons{Mask: r.reasons, OK: true}}
	if limitW > 0 {
		d.PowerLimitW = gpu.Some(limitW)
	}
	if defaultW > 0 {
		d.PowerLimitDefaultW = gpu.Some(defaultW)
	}
	return []gpu.Device{d}
}

// replay drives a busy, healthy engine for 5 minutes at 5 s cycles
// beside the real H200's loaded readings (taken in turn) and returns the
// last verdict and whether gpu_throttling was raised at any cycle.
func replay(t *testing.T, rs []h200Reading, limitW, defaultW float64) (Verdict, bool) {
	t.Helper()
	d, e := New(settings()), newEngine()
	var v Verdict
	raised := false
	for k := range 60 {
		e.healthy()
		at := t0.Add(time.Duration(k) * 5 * time.Second)
		v = d.Observe(at, e.snap(at), rs[k%len(rs)].device(limitW, defaultW), true)
		raised = raised || v.Modes[GPUThrottling].Raised
	}
	return v, raised
}

// A real H200 under dense bf16 matrix products sits at its 700 W default
// limit with sw_power_cap set and its SM clock at 0.74 to 0.77 of the
// maximum: a busy GPU using its whole power budget. Beside a healthy busy
// engine that is not gpu_throttling. The same readings under a limit
// lowered to 450 W of the 700 W default are a cap someone set, and are.
func TestGPUAtItsOwnPowerLimitIsNotThrottled(t *testing.T) {
	rs := loaded(readH200(t))
	if len(rs) < 40 {
		t.Fatalf("%d loaded readings in the trace, want the 45 s of load", len(rs))
	}
	// The trace is what the test says it is: no slowdown reason, and
	// (but for the first second of the ramp) at the limit under the bar.
	atLimitSlow := 0
	for _, r := range rs {
		if r.reasons&slowdownBits != 0 {
			t.Fatalf("reading %+v has a slowdown reason", r)
		}
		if r.smMHz/r.smMaxMHz < DefaultSettings().Thresholds.ClockRatio && r.powerW >= 0.97*r.limitW {
			atLimitSlow++
		}
	}
	if atLimitSlow < len(rs)-1 {
		t.Fatalf("%d of %d loaded readings at the limit under the clock bar", atLimitSlow, len(rs))
	}

	v, raised := replay(t, rs, 0, 700)
	st := v.Modes[GPUThrottling]
	if !st.Supported || raised {
		t.Fatalf("default 700 W limit: supported %v, raised %v (%s)", st.Supported, raised, st.Evidence)
	}
	if w := v.Window; !w.GPUClockRatio.OK || w.GPUClockRatio.V >= DefaultSettings().Thresholds.ClockRatio || !w.GPUClockExplainedShare.OK || w.GPUClockExplainedShare.V != 1 {
		t.Fatalf("window clock ratio %v, at own limit %v: want under the bar, at the limit in every reading", w.GPUClockRatio, w.GPUClockExplainedShare)
	}

	// A backend that does not read the default limit (dcgm-exporter's
	// default counters): sw_power_cap is taken as the board's own limit.
	if _, raised := replay(t, rs, 0, 0); raised {
		t.Error("default limit unknown: gpu_throttling raised at the power limit")
	}

	// The operator lowered the limit: the clock is held down by a cap.
	v, raised = replay(t, rs, 450, 700)
	if !raised {
		t.Errorf("limit lowered to 450 W of 700 W: not raised (%s)", v.Modes[GPUThrottling].Evidence)
	}

	// The same card idle with no process on it, as nvidia-smi -q read it
	// (testdata/README.md): SM 345 of 1980 MHz, reason Idle. An engine
	// that claims running requests beside an idle GPU is not throttled
	// (engine_stall judges whether it produces tokens).
	idle := []h200Reading{{powerW: 83, limitW: 700, smMHz: 345, smMaxMHz: 1980, reasons: gpuIdle}}
	if v, raised := replay(t, idle, 0, 700); raised {
		t.Errorf("idle GPU beside a busy engine: gpu_throttling raised (%s)", v.Modes[GPUThrottling].Evidence)
	}

	// A thermal slowdown beside the power cap is throttling whatever the limit.
	hot := make([]h200Reading, len(rs))
	for i, r := range rs {
		r.reasons |= 0x20 // sw_thermal_slowdown
		hot[i] = r
	}
	if v, raised := replay(t, hot, 0, 700); !raised {
		t.Errorf("sw_thermal_slowdown at the power limit: not raised (%s)", v.Modes[GPUThrottling].Evidence)
	}
}
