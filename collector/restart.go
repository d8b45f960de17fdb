package collector

import (
	"fmt"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// MarkRestart compares a snapshot with the previous one of the same target
// and sets cur.Restarted when cur is not a continuation: the process start
// time changed, or any cumulative value of a model present in both went
// down. It returns why, or "" when cur continues prev.
func MarkRestart(prev, cur *snapshot.Snapshot) string {
	if prev == nil || cur == nil {
		return ""
	}
	why := restartReason(prev, cur)
	if why != "" {
		cur.Restarted = true
	}
	return why
}

func restartReason(prev, cur *snapshot.Snapshot) string {
	if prev.ProcessStart != 0 && cur.ProcessStart != 0 && prev.ProcessStart != cur.ProcessStart {
		return fmt.Sprintf("process start time changed from %.0f to %.0f", prev.ProcessStart, cur.ProcessStart)
	}
	for i := range cur.Models {
		m := &cur.Models[i]
		p := prev.Model(m.Name)
		if p == nil {
			continue
		}
		for c := range snapshot.NumCounters {
			if p.Counters[c].OK && m.Counters[c].OK && m.Counters[c].V < p.Counters[c].V {
				return fmt.Sprintf("model %q: a counter went down from %g to %g", m.Name, p.Counters[c].V, m.Counters[c].V)
			}
		}
		for reason, v := range m.Finished {
			if pv, ok := p.Finished[reason]; ok && v < pv {
				return fmt.Sprintf("model %q: finished requests (%s) went down from %g to %g", m.Name, reason, pv, v)
			}
		}
		for h := range snapshot.NumHists {
			if p.Hists[h] != nil && m.Hists[h] != nil && m.Hists[h].Count < p.Hists[h].Count {
				return fmt.Sprintf("model %q: %s count went down from %g to %g", m.Name, m.HistSource[h], p.Hists[h].Count, m.Hists[h].Count)
			}
		}
	}
	return ""
}
