package sim

import (
	"math"
	"testing"
)

// The expected strings are what Python's prometheus_client and a C++
// ostream print for the same values.
func TestPyFloat(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0.0", 14: "14.0", 0.6213: "0.6213", 958270: "958270.0", 1302169: "1.302169e+06",
		1e6: "1e+06", 0.001: "0.001", 1e-05: "1e-05", 2560: "2560.0", 1.774011384e9: "1.774011384e+09",
		math.Inf(1): "+Inf", 12345678901: "1.2345678901e+010",
	} {
		if got := pyFloat(v); got != want {
			t.Errorf("pyFloat(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestCppFloat(t *testing.T) {
	for v, want := range map[float64]string{26129: "26129", 32.378: "32.378", 1.05234: "1.05234", 0: "0", 806.9991: "806.999", 1234567: "1.23457e+06"} {
		if got := cppFloat(v); got != want {
			t.Errorf("cppFloat(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestVLLMTokenBuckets(t *testing.T) {
	b := vllmTokenBuckets(131072)
	if b[0] != 1 || b[len(b)-1] != 100000 || len(b) != 16 {
		t.Fatalf("1-2-5 buckets to 131072: %v", b)
	}
}
