package gpu

import (
	"errors"
	"strings"
	"testing"
)

func fakeConstructors(nvmlErr error) constructors {
	return constructors{
		nvml: func(NVMLOptions) (Backend, error) {
			if nvmlErr != nil {
				return nil, nvmlErr
			}
			return &fakeBackend{name: BackendNVML}, nil
		},
		dcgm: func(DCGMOptions) (Backend, error) {
			return nil, errors.New("dcgm: cannot load libdcgm.so.4: library not found")
		},
		exporter: func(o DCGMExporterOptions) (Backend, error) { return NewDCGMExporter(o) },
	}
}

func TestSelect(t *testing.T) {
	noLib := errors.New("nvml: cannot load libnvidia-ml.so.1: library not found")
	for _, c := range []struct {
		name        string
		nvmlErr     error
		opts        SelectOptions
		wantBackend string // Backend.Name(), "" for nil
		wantChoice  string
		wantReason  string
		wantErr     string
	}{
		{"auto with NVML", nil, SelectOptions{}, "nvml", "nvml", "NVML library loaded", ""},
		{"auto falls back to dcgm-exporter", noLib, SelectOptions{Exporter: DCGMExporterOptions{URL: "http://localhost:9400/metrics"}},
			"dcgm-exporter", "dcgm-exporter", "libnvidia-ml.so.1: library not found; using dcgm-exporter at http://localhost:9400/metrics", ""},
		{"auto with nothing", noLib, SelectOptions{Backend: "auto"}, "", "none", "no GPU backend: nvml: cannot load libnvidia-ml.so.1", ""},
		{"auto with a bad URL", noLib, SelectOptions{Exporter: DCGMExporterOptions{URL: "localhost:9400"}}, "", "dcgm-exporter", "", "not an http(s) URL"},
		{"none", nil, SelectOptions{Backend: "none"}, "", "none", "disabled", ""},
		{"nvml without library", noLib, SelectOptions{Backend: "nvml"}, "", "nvml", "requested", "libnvidia-ml.so.1"},
		{"dcgm without library", nil, SelectOptions{Backend: "dcgm"}, "", "dcgm", "requested", "libdcgm.so.4"},
		{"dcgm-exporter without URL", nil, SelectOptions{Backend: "dcgm-exporter"}, "", "dcgm-exporter", "requested", "no URL configured"},
		{"unknown", nil, SelectOptions{Backend: "rocm"}, "", "none", "", `unknown GPU backend "rocm"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, choice, err := fakeConstructors(c.nvmlErr).selectBackend(c.opts)
			got := ""
			if b != nil {
				got = b.Name()
			}
			if got != c.wantBackend || choice.Backend != c.wantChoice || !strings.Contains(choice.Reason, c.wantReason) {
				t.Errorf("backend %q choice %+v, want %q %q reason containing %q", got, choice, c.wantBackend, c.wantChoice, c.wantReason)
			}
			if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("err = %v, want %q", err, c.wantErr)
			}
		})
	}
}

// On this machine's real loaders: whatever auto picks, it must not fail
// when nothing is configured, and must name why.
func TestSelectRealAuto(t *testing.T) {
	b, choice, err := Select(SelectOptions{})
	if err != nil {
		t.Fatalf("auto failed: %v", err)
	}
	if b != nil {
		defer func() { _ = b.Close() }()
	}
	if choice.Reason == "" || (b == nil) != (choice.Backend == BackendNone) {
		t.Errorf("backend %v, choice %+v", b, choice)
	}
}
