package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ByteSize is a size in bytes, written in YAML or a flag as a plain
// integer, with a unit: 512KiB, 32MiB, 1GiB (binary) or 10MB (decimal),
// or as a Kubernetes quantity: 192Mi, 1Gi, 500M, 1e9 (the notation of a
// container's resources.limits.memory).
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// UnmarshalYAML accepts an integer or a number with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseByteSize(n.Value)
	if err != nil {
		// A TypeError lets decoding go on to the file's other problems.
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*b = v
	return nil
}

// ParseByteSize reads "32MiB", "1000000", "10MB", or a Kubernetes
// quantity ("192Mi", "1Gi", "1G"); a quantity that is not a whole number
// of bytes ("1m", a milli-byte) is refused.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	if v, ok := parseUnits(s); ok {
		return v, nil
	}
	if q, err := resource.ParseQuantity(s); err == nil && q.Sign() > 0 {
		// Value rounds up; a whole number of bytes is equal to it.
		if n := q.Value(); n > 0 && n < 1<<62 && q.Cmp(*resource.NewQuantity(n, resource.BinarySI)) == 0 {
			return ByteSize(n), nil
		}
	}
	return 0, fmt.Errorf("%q is not a positive size (use bytes, KiB, MiB, GiB, or a Kubernetes quantity such as 192Mi or 1Gi)", s)
}

// parseUnits reads an integer with one of byteUnits, or none.
func parseUnits(s string) (ByteSize, bool) {
	mult := int64(1)
	num := s
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<63-1)/mult {
		return 0, false
	}
	return ByteSize(n * mult), true
}
