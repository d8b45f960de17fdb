package exposition

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// writeText writes the text of the family at index i of the list being
// used, exactly as expfmt.MetricFamilyToText would write it now.
//
// A sample line's name and labels (a histogram bucket's le included)
// never change for a cached series: a new series, or one whose bucket
// layout changed, is written once through expfmt (as a family of that one
// series, whose lines are the family's lines for it: expfmt writes the
// header, then each metric on its own), and its lines are kept up to the
// value. A render writes the family's header, then for each series its
// kept lines and its values formatted as expfmt formats them
// (appendValue), from one text per family that the series' lines are
// copied into when the family's series change (join). So expfmt stays
// the source of every byte, and what did not change is not encoded
// again: the escaping and writing of 15,000
// names and label sets was most of a render of a 100-model engine, and a
// model coming or going costs the encoding of its own series only.
//
// Each series' encoding is checked: its lines must be exactly the kept
// parts followed by its values in the order sampleValues gives them, and
// its header the family's. A family with a series that fails the check (a
// timestamp, an unexpected shape) is encoded through expfmt on every
// render until its series change.
func (c *SeriesCache) writeText(buf *bytes.Buffer, i int) error {
	f := c.outFam[i]
	if !f.direct && !f.joined {
		for _, s := range f.members {
			if s.ends == nil && !c.encodeSeries(f, s) {
				f.direct = true
				break
			}
		}
		if !f.direct {
			f.join()
		}
	}
	if !f.direct {
		typ := f.mf.GetType()
		c.values = c.values[:0]
		for _, s := range f.members {
			c.values = sampleValues(c.values, typ, s.m)
		}
		if len(c.values) != len(f.ends)-1 {
			f.direct = true // cannot happen while the series are unchanged
		}
	}
	if f.direct {
		f.text, f.ends = nil, nil
		_, err := expfmt.MetricFamilyToText(buf, &f.mf)
		return err
	}
	buf.Grow(len(f.text) + 26*len(c.values))
	b := buf.AvailableBuffer()
	b = append(b, f.text[:f.ends[0]]...)
	for k, v := range c.values {
		b = append(b, f.text[f.ends[k]:f.ends[k+1]]...)
		b = appendValue(b, v)
		b = append(b, '\n')
	}
	buf.Write(b)
	return nil
}

// join copies the header and the members' kept lines, in order, into the
// family's one text, which a render reads front to back: a copy when the
// family's series change, instead of an encoding. The text is a new slice
// each time, and each member's kept lines become its part of it (capped,
// so nothing appends into a neighbour): the lines are kept once, not once
// in the series and again in the family (checkKeptOnce, in every round of
// TestCachedTextMatchesExpfmt).
func (f *cachedFamily) join() {
	n, lines := len(f.header), 1
	for _, s := range f.members {
		n += len(s.text)
		lines += len(s.ends)
	}
	if n > math.MaxInt32 {
		f.direct = true
		return
	}
	text := make([]byte, 0, n)
	text = append(text, f.header...)
	f.ends = append(slices.Grow(f.ends[:0], lines), int32(len(f.header)))
	for _, s := range f.members {
		base := len(text)
		text = append(text, s.text...)
		for _, e := range s.ends {
			f.ends = append(f.ends, int32(base)+e)
		}
		s.text = text[base:len(text):len(text)]
	}
	f.text = text
	f.joined = true
}

// encodeSeries writes s through expfmt as a family of its own and keeps
// its lines up to the values; it reports whether they could be kept.
func (c *SeriesCache) encodeSeries(f *cachedFamily, s *cachedSeries) bool {
	c.textEncodes++
	c.one.Name, c.one.Help, c.one.Type = f.mf.Name, f.mf.Help, f.mf.Type
	c.one.Metric = append(c.one.Metric[:0], s.m)
	header, text, ends, ok := encodeLines(&c.scratch, &c.one, c.values[:0])
	c.one.Metric[0] = nil
	if !ok {
		return false
	}
	if f.header == nil {
		f.header = bytes.Clone(header)
	} else if !bytes.Equal(f.header, header) {
		return false
	}
	s.text, s.ends = text, ends
	return true
}

// encodeLines encodes mf (one metric) through expfmt into scratch and
// splits it: the header (HELP and TYPE lines), and each sample line's
// part up to and including the space before its value (text, a new
// slice; ends[k] is where line k's part ends). ok is false when the
// lines are not exactly those parts followed by the metric's values as
// appendValue spells them. values is scratch.
func encodeLines(scratch *bytes.Buffer, mf *dto.MetricFamily, values []float64) (header, text []byte, ends []int32, ok bool) {
	if len(mf.Metric) != 1 || mf.Metric[0].TimestampMs != nil {
		return nil, nil, nil, false // a sample line would end with the timestamp
	}
	scratch.Reset()
	if _, err := expfmt.MetricFamilyToText(scratch, mf); err != nil {
		return nil, nil, nil, false
	}
	values = sampleValues(values, mf.GetType(), mf.Metric[0])
	out := scratch.Bytes()
	lines := 1 // TYPE
	if mf.Help != nil {
		lines = 2
	}
	for range lines {
		nl := bytes.IndexByte(out[len(header):], '\n')
		if nl < 0 {
			return nil, nil, nil, false
		}
		header = out[:len(header)+nl+1]
	}
	rest := out[len(header):]
	text = make([]byte, 0, len(rest))
	ends = make([]int32, 0, len(values))
	var val []byte
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 || len(ends) == len(values) {
			return nil, nil, nil, false
		}
		l := rest[:nl]
		rest = rest[nl+1:]
		val = appendValue(val[:0], values[len(ends)])
		p := len(l) - len(val)
		if p < 1 || l[p-1] != ' ' || !bytes.Equal(l[p:], val) {
			return nil, nil, nil, false
		}
		text = append(text, l[:p]...)
		if len(text) > math.MaxInt32 {
			return nil, nil, nil, false
		}
		ends = append(ends, int32(len(text)))
	}
	if len(ends) != len(values) {
		return nil, nil, nil, false
	}
	return header, text, ends, true
}

// sampleValues appends the values of m's sample lines, in a family of
// type typ, in the order expfmt.MetricFamilyToText writes them
// (text_create.go of prometheus/common v0.73): one for a counter, gauge or
// untyped metric; for a histogram each bucket's cumulative count (the
// float count when it is not 0), a +Inf bucket with the sample count when
// no bucket has that bound, the sum and the count; for a summary each
// quantile, the sum and the count.
func sampleValues(values []float64, typ dto.MetricType, m *dto.Metric) []float64 {
	switch typ {
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
