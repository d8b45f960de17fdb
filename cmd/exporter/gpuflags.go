package main

import (
	"log/slog"
	"os"

	"github.com/goodput-exporter/goodput-exporter/attribution"
	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
)

// gpuFlags choose how the node's GPUs are read and tied to engines.
type gpuFlags struct {
	Backend         string `name:"gpu.backend" default:"auto" enum:"auto,nvml,dcgm,dcgm-exporter,none" help:"How to read the GPUs (${enum}); auto: NVML if its library loads, else --gpu.dcgm-exporter.url, else none."`
	NVMLLibrary     string `name:"gpu.nvml.library" placeholder:"PATH" help:"libnvidia-ml.so.1 to load instead of the loader's search path."`
	DCGMAddress     string `name:"gpu.dcgm.address" placeholder:"HOST:PORT" help:"nv-hostengine address (host:port or unix socket path); empty runs DCGM embedded."`
	DCGMExporterURL string `name:"gpu.dcgm-exporter.url" placeholder:"URL" help:"An existing dcgm-exporter's /metrics to read the GPUs from."`
	PodResources    string `name:"gpu.pod-resources.socket" default:"/var/lib/kubelet/pod-resources/kubelet.sock" help:"kubelet pod-resources socket, for attributing GPUs to engine pods; ignored when absent."`
	ProcPath        string `name:"gpu.proc-path" default:"/proc" help:"procfs of the host, for attributing GPUs to engine processes."`
}

// manager opens the chosen backend and says once, in the log, what it
// chose and why. A backend that cannot start (or auto finding none) leaves
// a manager that exports goodput_exporter_gpu_backend_up 0; engine series
// are unaffected. --gpu.backend=none returns nil: GPUs deliberately off
// export no GPU series at all, so that an alert on backend_up == 0 does
// not fire on a node that was told to read no GPU.
func (f *gpuFlags) manager(logger *slog.Logger) *gpu.Manager {
	if f.Backend == gpu.BackendNone {
		logger.Info("GPU collection disabled (--gpu.backend=none); no GPU series")
		return nil
	}
	backend, choice, err := gpu.Select(gpu.SelectOptions{
		Backend:  f.Backend,
		NVML:     gpu.NVMLOptions{LibraryPath: f.NVMLLibrary},
		DCGM:     gpu.DCGMOptions{Address: f.DCGMAddress},
		Exporter: gpu.DCGMExporterOptions{URL: f.DCGMExporterURL},
	})
	switch {
	case err != nil:
		logger.Error("GPU backend unavailable; GPU series off, engine series unaffected", "backend", choice.Backend, "err", err)
	case backend == nil:
		logger.Info("no GPU backend; GPU series off", "why", choice.Reason)
	default:
		logger.Info("GPU backend", "backend", choice.Backend, "why", choice.Reason)
	}
	var pods attribution.PodLister
	if _, statErr := os.Stat(f.PodResources); statErr == nil {
		pods = attribution.NewPodResources(attribution.PodResourcesOptions{Socket: f.PodResources})
	} else if backend != nil {
		logger.Info("kubelet pod-resources socket not found; GPUs are attributed by configuration and by process only", "socket", f.PodResources)
	}
	return gpu.NewManager(gpu.ManagerOptions{
		Backend:     backend,
		BackendName: choice.Backend,
		Attributor:  attribution.New(attribution.Options{Pods: pods, Proc: attribution.NewProcfs(f.ProcPath)}),
		Logger:      logger,
	})
}
