package testbody

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// HistOf builds the cumulative histogram of the observations obs over
// bounds, as an engine's exposition would report it.
func HistOf(bounds []float64, obs ...float64) *snapshot.Histogram {
	h := &snapshot.Histogram{Bounds: bounds, Cumulative: make([]float64, len(bounds))}
	for _, v := range obs {
		for i, b := range bounds {
			if v <= b {
				h.Cumulative[i]++
			}
		}
		h.Count++
		h.Sum += v
	}
	return h
}
