package collector

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The text format's fast path, in the spirit of Prometheus' scrape cache:
// a line whose series text (everything before the value) was learnt from
// an earlier body is recognised without running the lexer (its key, a
// hash of its text, compared with that of the series that followed the
// previous one in the last body, else looked up in the series cache), and
// only its value (and timestamp) is read, with strconv. A comment line seen before,
// byte for byte, is known to be valid and is skipped. Anything else goes
// through textparse: a new series or comment line alone (parseLine), or,
// when that is not enough (a quoted string across lines, an error, a NUL
// that ends the body), the rest of the body (rest).
//
// Why a hit is sound: a key of the series cache (and the key of a slot
// that is not dead, which is such a key) is the key of exactly what
// textparse's PromParser returned as a series (two texts with one key
// being a chance of about 2^-128: see seriesKey), so it is a complete series
// (ending with its name or its closing brace) that the lexer reads the
// same way whatever follows it. When a line starts with a key, followed by
// blanks, a value of the characters [0-9A-Za-z.+-], optionally blanks and
// a timestamp of digits, then optional blanks and its newline, textparse
// would read the same series, value and timestamp from it: its value token
// is the longest run without '{', blanks or newline, its timestamp a run
// of digits. Every other shape goes to textparse, which gives the value or
// the error. The lexer needs no context from earlier lines except the
// last TYPE (it normalises le and quantile labels of histograms and
// summaries when a series is learnt), which the fast path tracks and
// hands to textparse.

// commentSlot is a comment line that textparse accepted.
type commentSlot struct {
	gen   uint32
	mtype model.MetricType // for a TYPE line, its type
	typ   bool             // a TYPE line
}

// lineKind is what one line was.
type lineKind uint8

const (
	lineBlank lineKind = iota
	lineSample
	lineComment
	lineType
)

// slowRun is how many samples in a row the fast path may hand to
// textparse one by one (a parser each) before the rest of the body goes
// to one textparse pass: a body of new series every scrape (50,000 bucket
// bounds that shift) then costs one parser, not one per line. Not on a
// parser's first body, whose lines are all new: reading them one by one
// learns the comment lines too, so that the second body is all fast path.
const slowRun = 64

// parseText reads a body of the text format line by line.
func (p *Parser) parseText(body []byte) error {
	p.mtype = ""
	typeAt, sinceType := -1, 0 // the last TYPE line, and entries after it
	slow := 0                  // samples in a row not known to the fast path
	first := len(p.cache) == 0
	for off := 0; off < len(body); {
		nl := bytes.IndexByte(body[off:], '\n')
		if nl < 0 {
			return p.rest(body, off, typeAt, sinceType)
		}
		line := body[off : off+nl+1]
		kind, ok := p.fastLine(line)
		if !ok && p.overLine(line) {
			kind, ok = lineSample, true
		}
		if ok {
			slow = 0
		} else {
			if slow > slowRun && !first {
				return p.rest(body, off, typeAt, sinceType)
			}
			if kind, ok = p.parseLine(line); !ok {
				return p.rest(body, off, typeAt, sinceType)
			}
			if kind == lineSample {
				slow++
			}
		}
		switch kind {
		case lineBlank:
		case lineType:
			typeAt, sinceType = off, 0
			if err := p.count(); err != nil {
				return err
			}
		default:
			sinceType++
			if err := p.count(); err != nil {
				return err
			}
		}
		off += len(line)
	}
	return nil
}

// rest reads the body from off to its end with textparse alone, starting
// at the last TYPE line (at typeAt, followed by sinceType entries already
// read) so that textparse has the same context as over the whole body.
func (p *Parser) rest(body []byte, off, typeAt, sinceType int) error {
	skip := 0
	if typeAt >= 0 {
		off, skip = typeAt, 1+sinceType
	}
	return p.readEntries(textparse.NewPromParser(body[off:], p.st, false), skip)
}

// fastLine reads a line it knows: blank, a comment line seen before, or a
// sample of a learnt series in the shape described above. ok is false for
// anything else, with nothing read.
func (p *Parser) fastLine(line []byte) (lineKind, bool) {
	c := line[0]
	switch {
	case c == '#':
		cs := p.comments[keyOf(line)]
		if cs == nil {
			return 0, false
		}
		if cs.gen != p.gen {
			cs.gen = p.gen
			p.cseen++
		}
		p.fastHits++
		if cs.typ {
			p.mtype = cs.mtype
			return lineType, true
		}
		return lineComment, true
	case isNameStart(c):
		return lineSample, p.fastSample(line)
	case c == '\n' || c == ' ' || c == '\t':
		for _, c := range line[:len(line)-1] {
			if c != ' ' && c != '\t' {
				return 0, false
			}
		}
		return lineBlank, true
	}
	return 0, false
}

// fastSample reads a sample line whose series was learnt.
func (p *Parser) fastSample(line []byte) bool {
	end, v, ok := sampleShape(line)
	if !ok {
		return false
	}
	// The series that followed the last one in the previous body, if it
	// is this one: bodies come in the same order, and the slots were
	// learnt in that order, so comparing with the guess's key reads
	// memory in order, where a look-up in the map reads it all over the
	// place.
	key := keyOf(line[:end])
	s := p.prev.next
	if s == nil || s.dead || s.key != key {
		if s = p.cache[key]; s == nil {
			return false
		}
	}
	p.follow(s)
	if math.IsNaN(v) {
		v = math.Float64frombits(value.NormalNaN) // as textparse does
	}
	series := line[:end]
	p.last = series
	p.fastHits++
	p.apply(s, v, series)
	return true
}

// sampleShape reads a sample line of the shape the fast path accepts
// (see above): end is where its series text ends, v its value.
func sampleShape(line []byte) (end int, v float64, ok bool) {
	end = 1
	for isNameChar(line[end]) { // the line ends with '\n', which is not
		end++
	}
	if line[end] == '{' {
		// A value or timestamp has no '}': the series ends at the last one.
		j := bytes.LastIndexByte(line, '}')
		if j < end {
			return 0, 0, false
		}
		end = j + 1
	}
	k := end
	for line[k] == ' ' || line[k] == '\t' {
		k++
	}
	if k == end {
		return 0, 0, false
	}
	vs := k
	for isValueChar(line[k]) {
		k++
	}
	if k == vs {
		return 0, 0, false
	}
	val := line[vs:k]
	ws := k
	for line[k] == ' ' || line[k] == '\t' {
		k++
	}
	if line[k] != '\n' {
		if k == ws {
			return 0, 0, false
		}
		ts := k
		for line[k] >= '0' && line[k] <= '9' {
			k++
		}
		if k == ts {
			return 0, 0, false
		}
		if _, err := strconv.ParseInt(string(line[ts:k]), 10, 64); err != nil {
			return 0, 0, false
		}
		for line[k] == ' ' || line[k] == '\t' {
			k++
		}
		if line[k] != '\n' {
			return 0, 0, false
		}
	}
	// textparse refuses hexadecimal floats (and '_', not a value char here).
	if bytes.IndexByte(val, 'p') >= 0 || bytes.IndexByte(val, 'P') >= 0 {
		return 0, 0, false
	}
	v, err := strconv.ParseFloat(string(val), 64)
	if err != nil {
		return 0, 0, false
	}
	return end, v, true
}

// overLine reports whether line is a sample of a family the table reads
// whose model is past the model limit (the limit is reached and the model
// is not one of those read), found without lexing the line: such a
// series is not remembered (it would cost a slot each: an engine serving
// 10,000 models writes hundreds of thousands), so every body would
// otherwise lex it again. The line is counted as a series left out, as
// learn would count it. Any line this does not read exactly as textparse
// would (a shape the fast path does not accept, an escape or a byte that
// is not UTF-8 in a label value, a label twice, a family whose series are
// kept or dropped by their labels) is left to textparse.
func (p *Parser) overLine(line []byte) bool {
	if p.opts.ModelLimit <= 0 || len(p.models) < p.opts.ModelLimit || !isNameStart(line[0]) {
		return false
	}
	end, _, ok := sampleShape(line)
	if !ok {
		return false
	}
	open := bytes.IndexByte(line[:end], '{')
	if open <= 0 {
		return false
	}
	ref, ok := p.tab.samples[string(line[:open])]
	if !ok || ref.src.kind == kindFinished && p.tab.reasonOf != nil {
		return false
	}
	var model []byte
	for _, k := range p.tab.modelLabels {
		v, found, plain := labelValue(line[open:end], k)
		if !plain {
			return false
		}
		if found && len(v) > 0 {
			model = v
			break
		}
	}
	if len(model) == 0 || len(model) > snapshot.MaxLabelValue {
		return false
	}
	if _, known := p.models[string(model)]; known {
		return false
	}
	p.dropped++
	p.droppedRaw = model
	return true
}

// labelValue finds key's value in a label set ({a="x",b="y"}); plain is
// false when the set is not one this reads as textparse does.
func labelValue(set []byte, key string) (v []byte, found, plain bool) {
	if len(set) < 2 || set[0] != '{' || set[len(set)-1] != '}' {
		return nil, false, false
	}
	rest := set[1 : len(set)-1]
	for len(rest) > 0 {
		n := 0
		for n < len(rest) && (isNameStart(rest[n]) && rest[n] != ':' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
			n++
		}
		if n == 0 || n+1 >= len(rest) || rest[n] != '=' || rest[n+1] != '"' {
			return nil, false, false
		}
		name := rest[:n]
		rest = rest[n+2:]
		q := bytes.IndexByte(rest, '"')
		if q < 0 {
			return nil, false, false
		}
		val := rest[:q]
		if bytes.IndexByte(val, '\\') >= 0 || bytes.IndexByte(val, '\n') >= 0 || !utf8.Valid(val) {
			return nil, false, false
		}
		if string(name) == key {
			if found {
				return nil, false, false // twice
			}
			v, found = val, true
		}
		rest = rest[q+1:]
		switch {
		case len(rest) == 0:
		case rest[0] == ',':
			rest = rest[1:]
		default:
			return nil, false, false
		}
	}
	return v, found, true
}

// parseLine reads one line with textparse, given the last TYPE as context:
// a new series is learnt, a comment line remembered. ok is false when the
// line is not one whole entry by itself (an error, a quoted string that
// goes on to the next line, a NUL that ends the body): the caller then
// reads the rest of the body with textparse.
func (p *Parser) parseLine(line []byte) (lineKind, bool) {
	if len(line) > maxSeriesBytes {
		// Left out unread (see maxSeriesBytes): a comment line without a
		// trace, a sample line with an error.
		if line[0] == '#' {
			return lineComment, true
		}
		p.refuse(line)
		return lineSample, true
	}
	buf := line
	ctx := p.mtype == model.MetricTypeHistogram || p.mtype == model.MetricTypeSummary
	if ctx {
		p.scratch = append(append(append(p.scratch[:0], "# TYPE x "...), p.mtype...), '\n')
		p.scratch = append(p.scratch, line...)
		buf = p.scratch
	}
	tp := textparse.NewPromParser(buf, p.st, false)
	if ctx {
		if et, err := tp.Next(); err != nil || et != textparse.EntryType {
			return 0, false
		}
	}
	// Every entry ends with a newline, and the line has one, at its end:
	// an entry read is the whole line.
	et, err := tp.Next()
	if err != nil {
		return 0, false
	}
	switch et {
	case textparse.EntrySeries:
		series, _, v := tp.Series()
		if len(series) > len(line) {
			return 0, false
		}
		series = line[:len(series)] // the same bytes, in the body
		p.last = series
		k := keyOf(series)
		s := p.cache[k]
		if s == nil {
			s = p.learn(tp, series, k)
		}
		p.follow(s)
		p.apply(s, v, series)
		return lineSample, true
	case textparse.EntryType:
		_, p.mtype = tp.Type()
		p.learnComment(line, &commentSlot{mtype: p.mtype, typ: true})
		return lineType, true
	case textparse.EntryHelp, textparse.EntryComment:
		p.learnComment(line, &commentSlot{})
		return lineComment, true
	}
	return 0, false
}

func (p *Parser) learnComment(line []byte, cs *commentSlot) {
	k := keyOf(line)
	if old := p.comments[k]; old != nil {
		if old.gen != p.gen {
			old.gen = p.gen
			p.cseen++
		}
		return
	}
	if !p.room(commentCost) {
		return // read again next time (see DefaultStateBudget)
	}
	cs.gen = p.gen
	p.cseen++
	p.comments[k] = cs
	p.learntComments = append(p.learntComments, k)
}

// sweepComments forgets comment lines that were not in this body.
func (p *Parser) sweepComments() {
	if p.cseen == len(p.comments) {
		return
	}
	for k, cs := range p.comments {
		if cs.gen != p.gen {
			delete(p.comments, k)
		}
	}
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':'
}

func isNameChar(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' }

// isValueChar: the characters of a float (digits, sign, point, exponent,
// NaN and Inf spelt in any case); textparse reads more and refuses them.
func isValueChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}
