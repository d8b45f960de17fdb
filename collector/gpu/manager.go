package gpu

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/goodput-exporter/goodput-exporter/attribution"
)

// TargetInfo is what the exporter knows about one engine target in a cycle.
type TargetInfo struct {
	Name      string
	Namespace string // with Pod: the pod, when discovered from Kubernetes
	Pod       string
	// Port is the engine's TCP port on this host; 0 when not local.
	Port int
	// GPUs configured for the target (UUIDs or indexes); they win.
	GPUs []string
	// GenerationTokens the target produced since the previous cycle.
	GenerationTokens float64
}

// TargetUsage is a target's share of the GPUs in one cycle, in the order
// of the targets given to Collect.
type TargetUsage struct {
	Target string
	// GPUs is the attributed GPU count this cycle: 1 per GPU held alone,
	// the token share of a shared one.
	GPUs float64
	// HeldGPUs counts each GPU the target holds as 1/holders, whatever
	// their token shares this cycle: a stable basis for pricing, where an
	// idle sharer still holds (and pays for) its part of the GPU.
	HeldGPUs float64
	// PowerW is the attributed board power now.
	PowerW float64
	// EnergyJ is the attributed energy since the previous cycle; EnergyOK
	// is false when none of its GPUs had an energy reading this cycle.
	EnergyJ  float64
	EnergyOK bool
}

// ManagerOptions configures a Manager.
type ManagerOptions struct {
	// Backend reads the GPUs; nil when none could be opened, in which case
	// goodput_exporter_gpu_backend_up{backend=BackendName} is 0.
	Backend     Backend
	BackendName string
	// Attributor ties GPUs to targets; nil uses configured GPUs only.
	Attributor *attribution.Attributor
	Logger     *slog.Logger
	// Clock times the readings (Now); nil is time.Now. A simulation whose
	// GPUs run faster than the wall clock passes its own, so that their
	// energy stays within what their power limit allows per second.
	Clock func() time.Time
	// ForgetAfter is how long a GPU may be missing from the backend's
	// answers before its energy counters are dropped; 0 means
	// DefaultForgetAfter.
	ForgetAfter time.Duration
}

// DefaultForgetAfter is how long a GPU missing from the backend's answers
// keeps its energy counters: an hour, the grace the exporter gives a model
// missing from its engine. A GPU that misses one dcgm-exporter scrape, or
// is away for a driver reload, comes back with its counters intact.
const DefaultForgetAfter = time.Hour

// Manager owns a GPU backend, the energy meter and attribution. Collect
// runs once per collection cycle; Metrics may run concurrently with it.
type Manager struct {
	backend Backend
	name    string
	attr    *attribution.Attributor
	log     *slog.Logger
	descs   descs

	// Collection-side state, touched only by Collect.
	collectMu   sync.Mutex
	meter       *EnergyMeter
	known       map[int]identity // index -> the UUID and name it last had
	engines     map[engineKey]*engineAcc
	gpuErrors   map[gpuErrorKey]float64
	backendErrs float64
	attrErrors  map[attribution.Method]float64
	lastLogged  map[string]string
	clock       func() time.Time
	forgetAfter time.Duration
	ids         map[string]gpuID // meter key -> the GPU's labels when last read
	glitches    map[gpuErrorKey]float64

	// The latest state, swapped whole at the end of each Collect.
	mu     sync.RWMutex
	latest *state
}

type identity struct{ uuid, name string }

type gpuID struct {
	index int
	uuid  string
}

type engineKey struct {
	target string
	method attribution.Method
	split  attribution.Split
}

type engineAcc struct {
	energyJ float64
	pod     PodRef
}

type gpuErrorKey struct {
	gpu, uuid, reason string
}

// NewManager returns a Manager; nothing is read until Collect.
func NewManager(opts ManagerOptions) *Manager {
	name := opts.BackendName
	if opts.Backend != nil {
		name = opts.Backend.Name()
	}
	if name == "" {
		name = BackendNone
	}
	attr := opts.Attributor
	if attr == nil {
		attr = attribution.New(attribution.Options{})
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	forget := opts.ForgetAfter
	if forget <= 0 {
		forget = DefaultForgetAfter
	}
	return &Manager{
		backend: opts.Backend, name: name, attr: attr, log: log, descs: newDescs(),
		meter: NewEnergyMeter(), known: map[int]identity{}, engines: map[engineKey]*engineAcc{},
		gpuErrors: map[gpuErrorKey]float64{}, attrErrors: map[attribution.Method]float64{},
		lastLogged: map[string]string{}, latest: &state{backend: name},
		clock: clock, forgetAfter: forget, ids: map[string]gpuID{}, glitches: map[gpuErrorKey]float64{},
	}
}

// Now is the time of a reading taken now, by the Manager's clock.
func (m *Manager) Now() time.Time { return m.clock() }

// Close closes the backend.
func (m *Manager) Close() error {
	if m.backend == nil {
		return nil
	}
	return m.backend.Close()
}

// Collect reads the GPUs, advances energy, attributes GPUs to targets and
// stores the state Metrics renders. It returns each target's usage (in
// the order given) and the backend's error, if it failed as a whole.
func (m *Manager) Collect(ctx context.Context, now time.Time, targets []TargetInfo) ([]TargetUsage, error) {
	m.collectMu.Lock()
	defer m.collectMu.Unlock()

	usage := make([]TargetUsage, len(targets))
	for i, t := range targets {
		usage[i].Target = t.Name
	}
	st := &state{backend: m.name}
	var devs []Device
	var err error
	if m.backend != nil {
		devs, err = m.backend.Collect(ctx)
		if err != nil {
			m.backendErrs++
			m.logChange("backend", "GPU backend failed", err)
			devs = nil
		} else {
			st.up = true
			m.logChange("backend", "", nil)
		}
	}
	seen := map[string]bool{}
	if st.up {
		seen = m.observe(ctx, now, devs, targets, usage, st)
	}
	for _, k := range m.meter.Absent(seen, now, m.forgetAfter) {
		id := m.ids[k]
		delete(m.ids, k)
		for _, r := range GlitchReasons() {
			delete(m.glitches, gpuErrorKey{strconv.Itoa(id.index), id.uuid, r})
		}
		m.log.Info("GPU missing for too long; its energy counters are dropped", "gpu", id.index, "uuid", id.uuid, "after", m.forgetAfter)
	}
	m.pruneEngines(targets)
	m.fill(st)

	m.mu.Lock()
	m.latest = st
	m.mu.Unlock()
	return usage, err
}

// observe handles one successful reading of the GPUs and returns the keys
// of the GPUs it read.
func (m *Manager) observe(ctx context.Context, now time.Time, devs []Device, targets []TargetInfo, usage []TargetUsage, st *state) map[string]bool {
	seen := make(map[string]bool, len(devs))
	deltas := make([]EnergyDelta, len(devs))
	gpus := make([]attribution.GPU, len(devs))
	for i := range devs {
		d := &devs[i]
		if d.UUID == "" { // a lost GPU keeps the UUID and name it had
			d.UUID, d.Name = m.known[d.Index].uuid, cmp.Or(d.Name, m.known[d.Index].name)
		} else {
			m.known[d.Index] = identity{d.UUID, d.Name}
		}
		m.countDeviceError(d)
		deltas[i] = m.meter.Observe(now, d)
		m.noteEnergy(d, deltas[i])
		seen[d.Key()] = true
		m.ids[d.Key()] = gpuID{d.Index, d.UUID}
		gpus[i] = attribution.GPU{Index: d.Index, UUID: d.UUID, MIGUUIDs: d.MIGUUIDs, PIDs: d.PIDs, Pods: podsOf(d)}
	}

	res := m.attr.Attribute(ctx, gpus, attributionTargets(targets))
	failed := map[attribution.Method]error{}
	for _, e := range res.Errors {
		failed[e.Method] = errors.Join(failed[e.Method], e)
	}
	for _, meth := range []attribution.Method{attribution.MethodConfig, attribution.MethodPodResources, attribution.MethodProcess} {
		if failed[meth] != nil {
			m.attrErrors[meth]++
		}
		m.logChange("attribution by "+string(meth), "GPU attribution failed", failed[meth])
	}
	index := make(map[string]int, len(targets))
	for i, t := range targets {
		index[t.Name] = i
	}
	st.gpus = make([]gpuState, len(devs))
	st.targetPods = make(map[string]PodRef, len(targets))
	for _, t := range targets {
		st.targetPods[t.Name] = PodRef{Namespace: t.Namespace, Pod: t.Pod}
	}
	power := map[engineKey]float64{}
	for i := range devs {
		d := &devs[i]
		st.gpus[i] = gpuState{dev: *d, shares: res.Shares[i]}
		for _, sh := range res.Shares[i] {
			u := &usage[index[sh.Target]]
			u.GPUs += sh.Fraction
			u.HeldGPUs += 1 / float64(len(res.Shares[i]))
			if d.PowerW.OK {
				u.PowerW += d.PowerW.V * sh.Fraction
			}
			k := engineKey{sh.Target, sh.Method, sh.Split}
			acc := m.engines[k]
			if acc == nil {
				acc = &engineAcc{pod: st.targetPods[sh.Target]}
				m.engines[k] = acc
			}
			if deltas[i].OK {
				acc.energyJ += deltas[i].Joules * sh.Fraction
				u.EnergyJ += deltas[i].Joules * sh.Fraction
				u.EnergyOK = true
			}
			if d.PowerW.OK {
				power[k] += d.PowerW.V * sh.Fraction
			}
		}
	}
	for k, w := range power {
		st.enginePower = append(st.enginePower, enginePower{key: k, pod: st.targetPods[k.target], watts: w})
	}
	return seen
}

// noteEnergy counts an energy glitch and logs, once per GPU and change of
// state, what was done about it; a counter reset is logged as it happens.
func (m *Manager) noteEnergy(d *Device, delta EnergyDelta) {
	key := "energy of gpu " + strconv.Itoa(d.Index)
	if delta.Reset {
		m.log.Info("GPU energy counter reset (driver reload); its new value counted as the increase", "gpu", d.Index, "uuid", d.UUID)
	}
	if delta.Glitch == "" {
		m.logChange(key, "", nil)
		return
	}
	m.glitches[gpuErrorKey{strconv.Itoa(d.Index), d.UUID, delta.Glitch}]++
	var what string
	switch delta.Glitch {
	case GlitchDecrease:
		what = "energy counter went down, but not to a driver-reload-sized value: interval not counted"
	case GlitchImplausible:
		what = "energy counter rose by more than the GPU can draw at its power limit: interval integrated from board power"
	default:
		what = "NaN, infinite or negative power or energy reading: treated as absent"
	}
	m.logChange(key, "GPU energy reading ignored", fmt.Errorf("gpu %d (%s): %s", d.Index, d.UUID, what))
}

// countDeviceError counts and logs (once per change) a GPU's failure.
func (m *Manager) countDeviceError(d *Device) {
	key := "gpu:" + strconv.Itoa(d.Index)
	if d.Err == nil {
		m.logChange(key, "", nil)
		return
	}
	reason := "call_failed"
	if errors.Is(d.Err, ErrGPULost) {
		reason = "gpu_lost"
	}
	m.gpuErrors[gpuErrorKey{strconv.Itoa(d.Index), d.UUID, reason}]++
	m.logChange(key, "GPU reading failed", fmt.Errorf("gpu %d (%s): %w", d.Index, d.UUID, d.Err))
}

// logChange logs err under key when it differs from the last one logged,
// and a recovery when it clears, so a persistent failure is one line.
func (m *Manager) logChange(key, msg string, err error) {
	last, had := m.lastLogged[key]
	switch {
	case err == nil && had:
		delete(m.lastLogged, key)
		m.log.Info("recovered", "what", key)
	case err != nil && err.Error() != last:
		m.lastLogged[key] = err.Error()
		m.log.Warn(msg, "err", err)
	}
}

// pruneEngines drops the running energy of targets no longer configured or
// discovered; their series go away with them.
func (m *Manager) pruneEngines(targets []TargetInfo) {
	live := make(map[string]bool, len(targets))
	for _, t := range targets {
		live[t.Name] = true
	}
	for k := range m.engines {
		if !live[k.target] {
			delete(m.engines, k)
		}
	}
}

// fill copies the running counters into st: those of the GPUs read this
// cycle, and those of GPUs missing from it but not yet forgotten.
func (m *Manager) fill(st *state) {
	read := make(map[string]bool, len(st.gpus))
	for i := range st.gpus {
		k := st.gpus[i].dev.Key()
		read[k] = true
		st.gpus[i].energy = slices.Clone(m.meter.Totals(k))
	}
	for _, k := range m.meter.Keys() {
		id := m.ids[k]
		if !read[k] {
			st.absent = append(st.absent, gpuState{dev: Device{Index: id.index, UUID: id.uuid}, energy: slices.Clone(m.meter.Totals(k))})
		}
		for _, r := range GlitchReasons() {
			gk := gpuErrorKey{strconv.Itoa(id.index), id.uuid, r}
			st.glitches = append(st.glitches, gpuErrorCount{gpuErrorKey: gk, count: m.glitches[gk]})
		}
	}
	slices.SortFunc(st.absent, func(a, b gpuState) int {
		return cmp.Or(cmp.Compare(a.dev.Index, b.dev.Index), cmp.Compare(a.dev.UUID, b.dev.UUID))
	})
	slices.SortFunc(st.glitches, func(a, b gpuErrorCount) int {
		return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.uuid, b.uuid), cmp.Compare(a.reason, b.reason))
	})
	st.engineEnergy = make([]engineEnergy, 0, len(m.engines))
	for k, acc := range m.engines {
		st.engineEnergy = append(st.engineEnergy, engineEnergy{key: k, pod: acc.pod, joules: acc.energyJ})
	}
	slices.SortFunc(st.engineEnergy, func(a, b engineEnergy) int { return compareKeys(a.key, b.key) })
	slices.SortFunc(st.enginePower, func(a, b enginePower) int { return compareKeys(a.key, b.key) })
	for k, v := range m.gpuErrors {
		st.gpuErrors = append(st.gpuErrors, gpuErrorCount{gpuErrorKey: k, count: v})
	}
	slices.SortFunc(st.gpuErrors, func(a, b gpuErrorCount) int {
		return cmp.Or(cmp.Compare(a.gpu, b.gpu), cmp.Compare(a.uuid, b.uuid), cmp.Compare(a.reason, b.reason))
	})
	st.backendErrors = m.backendErrs
	for meth, v := range m.attrErrors {
		st.attrErrors = append(st.attrErrors, attrErrorCount{method: meth, count: v})
	}
	slices.SortFunc(st.attrErrors, func(a, b attrErrorCount) int { return cmp.Compare(a.method, b.method) })
}

func compareKeys(a, b engineKey) int {
	return cmp.Or(cmp.Compare(a.target, b.target), cmp.Compare(a.method, b.method), cmp.Compare(a.split, b.split))
}

func attributionTargets(targets []TargetInfo) []attribution.Target {
	out := make([]attribution.Target, len(targets))
	for i, t := range targets {
		out[i] = attribution.Target{
			Name: t.Name, Pod: attribution.Pod{Namespace: t.Namespace, Name: t.Pod},
			Port: t.Port, GPUs: t.GPUs, Tokens: t.GenerationTokens,
		}
	}
	return out
}

func podsOf(d *Device) []attribution.Pod {
	if len(d.Pods) == 0 {
		return nil
	}
	out := make([]attribution.Pod, len(d.Pods))
	for i, p := range d.Pods {
		out[i] = attribution.Pod{Namespace: p.Namespace, Name: p.Pod}
	}
	return out
}
