package goodput

import "slices"

// Reconfigure replaces the SLOs, as on a configuration reload, keeping the
// baselines so that the next Update measures from the last snapshot
// instead of starting over. Totals carry over for each objective whose SLO
// name and declaration are unchanged; a changed objective starts from
// zero, since its old counts judged something else. Joint totals carry
// over only when the SLO's objectives are all unchanged, in the same order.
// Intervals are cleared until the next Update.
func (t *Tracker) Reconfigure(slos []SLO) {
	t.slos = slos
	for i := range t.states {
		st := &t.states[i]
		old := st.SLOs
		st.SLOs = t.match(st.Model)
		for j := range st.SLOs {
			k := slices.IndexFunc(old, func(o SLOState) bool { return o.SLO == st.SLOs[j].SLO })
			if k >= 0 {
				st.SLOs[j].carry(&old[k])
			}
		}
	}
}

// carry copies the totals of prev, the same SLO before a reload.
func (s *SLOState) carry(prev *SLOState) {
	same := len(s.Objectives) == len(prev.Objectives)
	for i := range s.Objectives {
		o := &s.Objectives[i]
		k := slices.IndexFunc(prev.Objectives, func(p ObjectiveState) bool { return p.Objective == o.Objective })
		if k < 0 {
			same = false
			continue
		}
		same = same && k == i
		o.Resolution, o.Total, o.Tokens = prev.Objectives[k].Resolution, prev.Objectives[k].Total, prev.Objectives[k].Tokens
	}
	if same {
		s.Joint = prev.Joint
		s.Joint.Interval = JointInterval{}
	}
}
