package gpu

// TargetDevices returns the readings of the GPUs attributed to target in
// the latest collection (each GPU once, however it is shared); nil when
// none is attributed or the backend is down. The failure-mode classifier
// reads them.
func (m *Manager) TargetDevices(target string) []Device {
	m.mu.RLock()
	st := m.latest
	m.mu.RUnlock()
	if st == nil {
		return nil
	}
	var out []Device
	for _, g := range st.gpus {
		for _, sh := range g.shares {
			if sh.Target == target {
				out = append(out, g.dev)
				break
			}
		}
	}
	return out
}
