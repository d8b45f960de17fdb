package sim

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// ModelSpec describes the served model for the roofline step-time model.
type ModelSpec struct {
	// Name is the model_name label value.
	Name string
	// Params is the parameter count; a token costs 2*Params FLOPs.
	Params float64
	// WeightBytes are read once per step.
	WeightBytes float64
	// Layers and Hidden size the attention FLOPs (GQA keeps Q at Hidden).
	Layers, Hidden int
	// KVBytesPerToken is the KV-cache footprint of one token (all layers).
	KVBytesPerToken float64
	// MaxModelLen caps prompt plus output tokens of one request.
	MaxModelLen int
}

// GPUSpec describes the accelerator, its power and thermal behaviour, and
// the identity it reports in the dcgm-exporter exposition.
type GPUSpec struct {
	ModelName string
	UUID      string // derived from the seed when empty
	PCIBusID  string
	Index     int
	Hostname  string
	// PeakFLOPS and MemBandwidth (bytes/s) are datasheet figures; the
	// efficiencies are the fractions a real engine reaches.
	PeakFLOPS, ComputeEfficiency float64
	MemBandwidth, MemEfficiency  float64
	// StepOverhead is paid once per step, PerSeqOverhead once per scheduled
	// sequence (sampling, bookkeeping).
	StepOverhead, PerSeqOverhead time.Duration
	// IdlePowerW is drawn with no kernel running, MaxPowerW at full
	// activity and full clocks; PowerLimitW is the management cap.
	IdlePowerW, MaxPowerW, PowerLimitW float64
	MaxSMClockMHz, IdleSMClockMHz      float64
	MemClockMHz                        float64
	// MinClockFactor is the lowest SM clock fraction throttling reaches.
	MinClockFactor float64
	MemoryMiB      float64
	// InletC, ThermalResistance (°C per W) and ThermalTau form a first
	// order thermal model; the driver holds the die at SlowdownC by
	// lowering clocks and hardware halves them at HWSlowdownC.
	InletC, ThermalResistance float64
	ThermalTau                time.Duration
	SlowdownC, HWSlowdownC    float64
	// ExportMaxSMClock adds DCGM_FI_DEV_MAX_SM_CLOCK to the dcgm-exporter
	// exposition, as dcgm-exporter serves it when the field is added to
	// its counters file (it is not among its defaults).
	ExportMaxSMClock bool
}

// EngineSpec holds the engine's scheduler and cache settings, named after
// the vLLM flags they model.
type EngineSpec struct {
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	BlockSize           int
	NumBlocks           int
	PrefixCaching       bool
	// Watermark is the fraction of blocks a newly admitted request must
	// leave free, so that running requests have room to grow.
	Watermark float64
	// GPUMemoryUtilization is the fraction of GPU memory the engine
	// reserves at start (weights, KV pool, activations).
	GPUMemoryUtilization float64
	// EngineIndex is the engine label value (data-parallel rank).
	EngineIndex string
	// TokenHistograms is SGLang's --collect-tokens-histogram: its format
	// then also exposes the per-request prompt and generation token
	// histograms (off by default, as in SGLang). vLLM always has them.
	TokenHistograms bool
	// LoadSlowdown stretches each step with the batch, as
	// llm-d-inference-sim's --time-factor-under-load does: a step of n
	// sequences takes 1 + (LoadSlowdown−1)(n−1)/(MaxNumSeqs−1) times the
	// roofline's time, LoadSlowdown times at a full batch. 0 or 1: none.
	LoadSlowdown float64
}

// TruthOptions bounds and exports the ground-truth records.
type TruthOptions struct {
	// Horizon drops records that finished longer ago than this; 0 keeps
	// every record.
	Horizon time.Duration
	// Log, when set, receives one JSON line per finished request.
	Log io.Writer
}

// Config is everything a simulated engine needs. Levers modify a copy of
// it; the Config itself is the healthy baseline.
type Config struct {
	Seed     uint64
	Model    ModelSpec
	GPU      GPUSpec
	Engine   EngineSpec
	Workload Workload
	Levers   LeverSpec
	// Scenario is the lever script; empty means healthy forever.
	Scenario Scenario
	Truth    TruthOptions
	// StartUnix is the wall-clock time (Unix seconds) of virtual time 0,
	// exposed as process_start_time_seconds.
	StartUnix float64
}

// DefaultConfig returns a Llama-3.1-8B on one H100-class GPU serving chat
// traffic at a healthy rate, well below the knee.
func DefaultConfig() Config {
	return Config{
		Seed: 1,
		Model: ModelSpec{
			Name:            "meta-llama/Llama-3.1-8B-Instruct",
			Params:          8.03e9,
			WeightBytes:     16.06e9,
			Layers:          32,
			Hidden:          4096,
			KVBytesPerToken: 2 * 32 * 8 * 128 * 2, // K and V, 32 layers, 8 KV heads, dim 128, bf16
			MaxModelLen:     131072,
		},
		GPU: GPUSpec{
			ModelName:         "NVIDIA H100 80GB HBM3",
			PCIBusID:          "00000000:18:00.0",
			Hostname:          "sim-node-0",
			PeakFLOPS:         989e12,
			ComputeEfficiency: 0.45,
			MemBandwidth:      3.35e12,
			MemEfficiency:     0.8,
			StepOverhead:      1500 * time.Microsecond,
			PerSeqOverhead:    30 * time.Microsecond,
			IdlePowerW:        80,
			MaxPowerW:         700,
			PowerLimitW:       700,
			MaxSMClockMHz:     1980,
			IdleSMClockMHz:    345,
			MemClockMHz:       2619,
			MinClockFactor:    0.3,
			MemoryMiB:         81559,
			InletC:            30,
			ThermalResistance: 0.08,
			ThermalTau:        20 * time.Second,
			SlowdownC:         87,
			HWSlowdownC:       92,
		},
		Engine: EngineSpec{
			// Tuned down from vLLM's 1024 so that the decode batch, not
			// the GPU, caps the load and TPOT stays in a chat SLO at the
			// knee; decode_saturation undoes it.
			MaxNumSeqs:           128,
			MaxNumBatchedTokens:  2048,
			BlockSize:            16,
			NumBlocks:            28000, // about 448k tokens: 80 GB at 0.9 less 16 GB of weights and activations
			PrefixCaching:        true,
			Watermark:            0.01,
			GPUMemoryUtilization: 0.9,
			EngineIndex:          "0",
		},
		Workload:  DefaultWorkload(),
		Levers:    DefaultLeverSpec(),
		Truth:     TruthOptions{Horizon: 15 * time.Minute},
		StartUnix: 1767225600, // 2026-01-01T00:00:00Z
	}
}

// Validate reports the first inconsistent setting.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	e, m, g := c.Engine, c.Model, c.GPU
	check(m.Params > 0 && m.WeightBytes > 0 && m.KVBytesPerToken > 0, "model: params, weight bytes and kv bytes per token must be positive")
	check(m.MaxModelLen > 1, "model: max model len %d must be > 1", m.MaxModelLen)
	check(g.PeakFLOPS > 0 && g.ComputeEfficiency > 0 && g.MemBandwidth > 0 && g.MemEfficiency > 0, "gpu: flops, bandwidth and efficiencies must be positive")
	check(g.StepOverhead > 0, "gpu: step overhead must be positive")
	check(g.IdlePowerW >= 0 && g.MaxPowerW > g.IdlePowerW && g.PowerLimitW > g.IdlePowerW, "gpu: need idle < max power and idle < power limit")
	check(g.MaxSMClockMHz > 0 && g.MinClockFactor > 0 && g.MinClockFactor <= 1, "gpu: max clock must be positive and min clock factor in (0,1]")
	check(g.ThermalTau > 0 && g.ThermalResistance > 0 && g.HWSlowdownC > g.SlowdownC, "gpu: thermal tau and resistance must be positive, hw slowdown above slowdown")
	check(e.MaxNumSeqs > 0, "engine: max num seqs must be positive")
	check(e.MaxNumBatchedTokens >= e.MaxNumSeqs, "engine: max num batched tokens %d must be >= max num seqs %d", e.MaxNumBatchedTokens, e.MaxNumSeqs)
	check(e.BlockSize > 0 && e.NumBlocks > 0, "engine: block size and block count must be positive")
	check(e.Watermark >= 0 && e.Watermark < 1, "engine: watermark must be in [0,1)")
	check(e.LoadSlowdown == 0 || e.LoadSlowdown >= 1, "engine: load slowdown %g must be 0 (none) or at least 1", e.LoadSlowdown)
	if err := c.Workload.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Scenario.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
