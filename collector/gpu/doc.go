// Package gpu reads the node's GPUs through one narrow Backend interface
// and turns the readings into the llm_gpu_* and llm_engine_gpu_* series.
//
// Three backends sit behind the interface: NVML (go-nvml, which dlopens
// libnvidia-ml), DCGM (go-dcgm, which dlopens libdcgm, embedded or through a
// host engine), and a scrape of an existing dcgm-exporter. Each reports the
// same Device sample; a value a GPU or a backend does not provide stays
// absent (Value.OK false), never a fake zero.
//
// The Manager owns a backend, an energy meter per GPU (hardware counter where
// present, else power integrated over time) and the attribution of GPUs to
// engine targets (package attribution). The exporter calls Manager.Collect
// once per collection cycle and Manager.Metrics, which sends const metrics
// from the state the last cycle left, on each render.
package gpu
