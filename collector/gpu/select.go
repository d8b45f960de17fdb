package gpu

import (
	"errors"
	"fmt"
)

// Backend names accepted by --gpu.backend.
const (
	BackendAuto         = "auto"
	BackendNVML         = "nvml"
	BackendDCGM         = "dcgm"
	BackendDCGMExporter = "dcgm-exporter"
	BackendNone         = "none"
)

// SelectOptions is the --gpu.* configuration.
type SelectOptions struct {
	Backend  string // auto|nvml|dcgm|dcgm-exporter|none; empty means auto
	NVML     NVMLOptions
	DCGM     DCGMOptions
	Exporter DCGMExporterOptions // Exporter.URL empty: no dcgm-exporter configured
}

// Choice says which backend was chosen and why, for one log line at start.
type Choice struct {
	Backend string // the backend label value; "none" when GPU series are off
	Reason  string
}

// constructors lets tests stand in for the library loaders.
type constructors struct {
	nvml     func(NVMLOptions) (Backend, error)
	dcgm     func(DCGMOptions) (Backend, error)
	exporter func(DCGMExporterOptions) (Backend, error)
}

func realConstructors() constructors {
	return constructors{
		nvml:     func(o NVMLOptions) (Backend, error) { return NewNVML(o) },
		dcgm:     func(o DCGMOptions) (Backend, error) { return NewDCGM(o) },
		exporter: func(o DCGMExporterOptions) (Backend, error) { return NewDCGMExporter(o) },
	}
}

// Select opens the backend --gpu.backend names. auto takes NVML when its
// library loads, else the configured dcgm-exporter URL, else none; it only
// fails on a bad URL. A named backend that cannot start is an error: the
// caller logs it, exports goodput_exporter_gpu_backend_up 0 for
// Choice.Backend and keeps serving engine series. Backend is nil for none.
func Select(opts SelectOptions) (Backend, Choice, error) {
	return realConstructors().selectBackend(opts)
}

func (c constructors) selectBackend(opts SelectOptions) (Backend, Choice, error) {
	name := opts.Backend
	if name == "" {
		name = BackendAuto
	}
	open := func(name string) (Backend, error) {
		switch name {
		case BackendNVML:
			return c.nvml(opts.NVML)
		case BackendDCGM:
			return c.dcgm(opts.DCGM)
		default:
			if opts.Exporter.URL == "" {
				return nil, errors.New("dcgm-exporter: no URL configured (--gpu.dcgm-exporter.url)")
			}
			return c.exporter(opts.Exporter)
		}
	}
	switch name {
	case BackendNone:
		return nil, Choice{BackendNone, "GPU collection disabled (--gpu.backend=none)"}, nil
	case BackendNVML, BackendDCGM, BackendDCGMExporter:
		b, err := open(name)
		if err != nil {
			return nil, Choice{name, "requested with --gpu.backend=" + name}, err
		}
		return b, Choice{name, "requested with --gpu.backend=" + name}, nil
	case BackendAuto:
	default:
		return nil, Choice{BackendNone, ""}, fmt.Errorf("unknown GPU backend %q (want auto, nvml, dcgm, dcgm-exporter or none)", name)
	}

	b, nvmlErr := open(BackendNVML)
	if nvmlErr == nil {
		return b, Choice{BackendNVML, "auto: NVML library loaded"}, nil
	}
	if opts.Exporter.URL == "" {
		return nil, Choice{BackendNone, fmt.Sprintf("auto: no GPU backend: %v, and no dcgm-exporter URL configured", nvmlErr)}, nil
	}
	b, err := open(BackendDCGMExporter)
	if err != nil {
		return nil, Choice{BackendDCGMExporter, fmt.Sprintf("auto: %v; dcgm-exporter configured", nvmlErr)}, err
	}
	return b, Choice{BackendDCGMExporter, fmt.Sprintf("auto: %v; using dcgm-exporter at %s", nvmlErr, opts.Exporter.URL)}, nil
}
