//go:build !cgo

package gpu

import "fmt"

// NewNVML reports that this binary was built without cgo, which go-nvml
// needs to dlopen libnvidia-ml.
func NewNVML(opts NVMLOptions) (*NVML, error) {
	return nil, fmt.Errorf("nvml: this binary was built without cgo: %w", ErrLibraryNotFound)
}
