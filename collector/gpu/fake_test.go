package gpu

import (
	"context"
	"slices"
	"sync"
)

// fakeBackend returns whatever devices a test sets.
type fakeBackend struct {
	name string

	mu     sync.Mutex
	devs   []Device
	err    error
	closed bool
}

func (f *fakeBackend) Name() string { return f.name }

func (f *fakeBackend) Collect(ctx context.Context) ([]Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return slices.Clone(f.devs), nil
}

func (f *fakeBackend) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeBackend) set(devs []Device, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.devs, f.err = devs, err
}
