package config

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Sizes are read in the project's units and in the Kubernetes quantity
// notation of a container's resources.limits.memory; the byte counts are
// worked by hand.
func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{
		"1000000": 1000000,
		"32MiB":   32 * 1048576,
		"10MB":    10000000,
		"192Mi":   201326592, // 192 × 1,048,576: the chart's default limit
		"1Gi":     1073741824,
		"1.5Gi":   1610612736,
		"500M":    500000000,
		"1G":      1000000000,
		"128k":    128000,
		"1e9":     1000000000,
		" 64Ki ":  65536,
	} {
		got, err := ParseByteSize(in)
		if err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "lots", "0", "-1Gi", "0Mi", "1m", "1.5", "9999999999999GiB", "1 Gi"} {
		if got, err := ParseByteSize(bad); err == nil {
			t.Errorf("ParseByteSize(%q) = %d, want an error", bad, got)
		} else if !strings.Contains(err.Error(), "192Mi") {
			t.Errorf("ParseByteSize(%q): %v does not name the quantity notation", bad, err)
		}
	}
}

// A configuration file's sizes take Kubernetes quantities too.
func TestByteSizeInYAML(t *testing.T) {
	var v struct {
		Size ByteSize `yaml:"size"`
	}
	if err := yaml.Unmarshal([]byte("size: 16Mi\n"), &v); err != nil || v.Size != 16<<20 {
		t.Fatalf("size: 16Mi read as %d, %v", v.Size, err)
	}
}
