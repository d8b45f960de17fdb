package exporter

import (
	"bytes"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// familyText is a cached family's text as expfmt.MetricFamilyToText wrote
// it when its structure last changed, less the values: its HELP and TYPE
// lines, then each sample line up to and including the space before the
// value. A sample line's name and labels (a histogram bucket's le
// included) change only with the family's series or a histogram's bucket
// layout, which mark it stale; a render after that writes the cached
// prefixes and the values formatted as expfmt formats them (appendValue).
// So expfmt stays the source of every byte, and what did not change is not
// encoded again: the escaping and writing of 15,000 names and label sets
// was most of a render of a 100-model engine.
//
// Each re-encode checks that the lines expfmt wrote are the prefixes
// followed by the values appendValue gives, in the order sampleValues
// gives them; a family that fails the check (a timestamp, an unexpected
// shape) is encoded through expfmt on every render until its structure
// changes again.
type familyText struct {
	text   []byte  // header, then each line's prefix
	ends   []int32 // ends[0]: the header's end; ends[i]: line i's prefix's end
	stale  bool    // re-encode on the next write
	direct bool    // the check failed: encode through expfmt
}

// writeText writes the text of the family at index i of the list being
// used, exactly as expfmt.MetricFamilyToText would write it now.
func (c *seriesCache) writeText(buf *bytes.Buffer, i int) error {
	f := c.outFam[i]
	ft := &f.text
	if ft.stale || ft.direct || len(ft.ends) == 0 {
		if ft.stale || !ft.direct {
			ft.stale = false
			c.textEncodes++
			if ft.encode(&f.mf, c.values[:0]) {
				ft.direct = false
			} else {
				ft.direct = true
				ft.text, ft.ends = nil, nil
			}
		}
		if ft.direct {
			_, err := expfmt.MetricFamilyToText(buf, &f.mf)
			return err
		}
	}
	c.values = sampleValues(c.values[:0], &f.mf)
	if len(c.values) != len(ft.ends)-1 {
		// Cannot happen while the structure is unchanged; be safe.
		ft.direct = true
		_, err := expfmt.MetricFamilyToText(buf, &f.mf)
		return err
	}
	buf.Grow(len(ft.text) + 26*len(c.values))
	b := buf.AvailableBuffer()
	b = append(b, ft.text[:ft.ends[0]]...)
	for k, v := range c.values {
		b = append(b, ft.text[ft.ends[k]:ft.ends[k+1]]...)
		b = appendValue(b, v)
		b = append(b, '\n')
	}
	buf.Write(b)
	return nil
}

// encode encodes mf through expfmt and keeps its prefixes; it reports
// whether the text is exactly the prefixes followed by mf's values.
// values is scratch.
func (ft *familyText) encode(mf *dto.MetricFamily, values []float64) bool {
	for _, m := range mf.Metric {
		if m.TimestampMs != nil {
			return false // a sample line would end with it
		}
	}
	var out bytes.Buffer
	out.Grow(len(ft.text) + len(ft.text)/4)
	if _, err := expfmt.MetricFamilyToText(&out, mf); err != nil {
		return false
	}
	values = sampleValues(values, mf)
	text := out.Bytes()
	header := 1 // TYPE
	if mf.Help != nil {
		header = 2
	}
	ft.text = ft.text[:0]
	ft.ends = ft.ends[:0]
	var val []byte
	line := 0
	for len(text) > 0 {
		nl := bytes.IndexByte(text, '\n')
		if nl < 0 {
			return false
		}
		l := text[:nl]
		text = text[nl+1:]
		switch {
		case line < header:
			ft.text = append(ft.text, l...)
			ft.text = append(ft.text, '\n')
			if line == header-1 {
				ft.ends = append(ft.ends, int32(len(ft.text)))
			}
		default:
			k := line - header
			if k >= len(values) {
				return false
			}
			val = appendValue(val[:0], values[k])
			p := len(l) - len(val)
			if p < 1 || l[p-1] != ' ' || !bytes.Equal(l[p:], val) {
				return false
			}
			ft.text = append(ft.text, l[:p]...)
			ft.ends = append(ft.ends, int32(len(ft.text)))
		}
		line++
	}
	if line-header != len(values) || len(ft.ends) == 0 || len(ft.text) > math.MaxInt32 {
		return false
	}
	return true
}

// sampleValues appends the values of mf's sample lines in the order
// expfmt.MetricFamilyToText writes them (text_create.go of
// prometheus/common v0.73): one per counter, gauge or untyped metric; for
// a histogram each bucket's cumulative count (the float count when it is
// not 0), a +Inf bucket with the sample count when no bucket has that
// bound, the sum and the count; for a summary each quantile, the sum and
// the count.
func sampleValues(values []float64, mf *dto.MetricFamily) []float64 {
	for _, m := range mf.Metric {
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			values = append(values, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			values = append(values, m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			values = append(values, m.GetUntyped().GetValue())
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				values = append(values, q.GetValue())
			}
			values = append(values, s.GetSampleSum(), float64(s.GetSampleCount()))
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			h := m.GetHistogram()
			inf := false
			for _, b := range h.GetBucket() {
				v := b.GetCumulativeCountFloat()
				if v == 0 {
					v = float64(b.GetCumulativeCount())
				}
				values = append(values, v)
				if math.IsInf(b.GetUpperBound(), +1) {
					inf = true
				}
			}
			count := h.GetSampleCountFloat()
			if count == 0 {
				count = float64(h.GetSampleCount())
			}
			if !inf {
				values = append(values, count)
			}
			values = append(values, h.GetSampleSum(), count)
		}
	}
	return values
}

// appendValue formats f as expfmt's writeFloat does: 1, 0 (also for -0),
// -1, NaN, +Inf and -Inf spelled out, anything else strconv's shortest 'g'.
func appendValue(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, '-', '1')
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	default:
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
}
