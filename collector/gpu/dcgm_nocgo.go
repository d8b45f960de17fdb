//go:build !cgo

package gpu

import "fmt"

// NewDCGM reports that this binary was built without cgo, which go-dcgm
// needs to dlopen libdcgm.
func NewDCGM(opts DCGMOptions) (*DCGM, error) {
	return nil, fmt.Errorf("dcgm: this binary was built without cgo: %w", ErrLibraryNotFound)
}
