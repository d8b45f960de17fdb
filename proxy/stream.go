package proxy

import (
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// stream is the measurement of one request, from arrival to finish. It is
// touched by the request's own goroutine only.
type stream struct {
	p         *Proxy
	rec       Record
	clientCtx context.Context // the client's: done when it hung up
	ctx       context.Context // the upstream request's (with the timeout)
	strip     bool            // the usage-only chunk was asked for by the proxy

	// readAt is when the bytes last handed on were read (Unix ns); the
	// reverse proxy may flush from a timer's goroutine, hence atomic.
	readAt    atomic.Int64
	lastRead  time.Time // the same, for the request's own goroutine
	eof       bool
	readErr   error
	malformed bool
	errEvent  bool
	usage     bool
	chunks    int64
	finished  bool
}

// onResponse classifies the status and wraps the body.
func (s *stream) onResponse(resp *http.Response) {
	s.rec.Status = resp.StatusCode
	switch code := resp.StatusCode; {
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		s.rec.Outcome, s.rec.Reason = OutcomeUpstreamError, ReasonStatus
	case code >= 400:
		s.rec.Outcome = OutcomeRejected
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case s.rec.Outcome != "":
		resp.Body = &countReader{s: s, body: resp.Body}
	case ct == "text/event-stream":
		resp.Body = &sseReader{s: s, body: resp.Body, max: int(s.p.opts.MaxEvent)}
	default:
		resp.Body = &jsonReader{s: s, body: resp.Body, max: int(s.p.opts.MaxResponseBody)}
	}
}

// fail records an upstream request that got no response.
func (s *stream) fail(err error) {
	s.rec.End = s.p.opts.Now()
	s.rec.Outcome, s.rec.Reason = s.classify(err)
}

// read is the common path of every body reader: it times the bytes and
// remembers how the body ended.
func (s *stream) read(body io.Reader, p []byte) (int, error) {
	n, err := body.Read(p)
	now := s.p.opts.Now()
	if n > 0 {
		s.lastRead = now
		s.readAt.Store(now.UnixNano())
		s.p.Metrics.responseBytes.Add(float64(n))
	}
	switch {
	case err == io.EOF:
		s.eof = true
		s.rec.End = now
	case err != nil && s.readErr == nil:
		s.readErr = err
		s.rec.End = now
	}
	return n, err
}

func (s *stream) takeReadTime() time.Time {
	if t := s.readAt.Swap(0); t != 0 {
		return time.Unix(0, t)
	}
	return time.Time{}
}

// first marks the first content-bearing bytes.
func (s *stream) first() {
	if !s.rec.HasTTFT {
		s.rec.HasTTFT = true
		s.rec.TTFT = s.lastRead.Sub(s.rec.Arrival)
	}
}

func (s *stream) addFinish(r string) {
	if r != "" && !slices.Contains(s.rec.FinishReasons, r) && len(s.rec.FinishReasons) < maxFinishReasons {
		s.rec.FinishReasons = append(s.rec.FinishReasons, r)
	}
}

// fold reads one streamed chunk, or a whole response: the OpenAI
// completion and chat completion objects share the fields read (choices'
// text, delta or message, and finish_reason; usage; error; model). It
// returns whether the chunk is the usage-only one the proxy asked for. A
// payload that is not JSON makes the stream malformed. gjson reads the
// few fields in place, without decoding the rest.
func (s *stream) fold(payload []byte) (strip bool) {
	if !gjson.ValidBytes(payload) {
		s.malformed = true
		return false
	}
	res := gjson.ParseBytes(payload)
	if !res.IsObject() {
		s.malformed = true
		return false
	}
	var choices, usage, errObj gjson.Result
	res.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "choices":
			choices = v
		case "usage":
			usage = v
		case "error":
			errObj = v
		case "model":
			if s.rec.Model == "" && v.Type == gjson.String && len(v.Str) <= maxResponseModels {
				s.rec.Model = v.Str
			}
		}
		return true
	})
	if errObj.Exists() && errObj.Type != gjson.Null {
		s.errEvent = true
	}
	n := 0
	choices.ForEach(func(_, ch gjson.Result) bool {
		n++
		content := false
		ch.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "text":
				content = content || v.Str != ""
			case "delta", "message":
				content = content || bearsContent(v)
			case "finish_reason":
				if v.Type == gjson.String {
					s.addFinish(v.Str)
				}
			}
			return true
		})
		if content {
			s.first()
			s.chunks++
		}
		return true
	})
	if ct := usage.Get("completion_tokens"); ct.Type == gjson.Number && ct.Num >= 0 && ct.Num == float64(int64(ct.Num)) {
		s.usage = true
		s.rec.Tokens = int64(ct.Num)
		if pt := usage.Get("prompt_tokens"); pt.Type == gjson.Number && pt.Num >= 0 {
			s.rec.PromptTokens = int64(pt.Num)
		}
	}
	return s.strip && n == 0 && usage.IsObject() && !errObj.Exists()
}

// bearsContent reports whether a delta or message carries generated
// content: text, reasoning, or tool calls.
func bearsContent(m gjson.Result) bool {
	found := false
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content", "reasoning_content", "reasoning":
			found = v.Type == gjson.String && v.Str != ""
		case "tool_calls":
			found = v.IsArray() && len(v.Array()) > 0
		}
		return !found
	})
	return found
}

// finish settles the outcome and hands the record on.
func (s *stream) finish() {
	if s.finished {
		return
	}
	s.finished = true
	r := &s.rec
	if r.End.IsZero() {
		r.End = s.p.opts.Now()
	}
	if r.Outcome == "" {
		switch {
		case s.readErr != nil:
			r.Outcome, r.Reason = s.classify(s.readErr)
		case !s.eof:
			// The copy stopped before the upstream's end without a read
			// error: writing to the client failed, or it went away.
			r.Outcome = OutcomeClientAbort
		case s.errEvent:
			r.Outcome, r.Reason = OutcomeUpstreamError, ReasonErrorEvent
		case s.malformed:
			r.Outcome, r.Reason = OutcomeUpstreamError, ReasonMalformed
		default:
			r.Outcome = OutcomeOK
		}
	} else if r.Outcome == OutcomeUpstreamError && r.Reason == ReasonStatus && s.clientCtx.Err() != nil && !s.eof {
		r.Outcome, r.Reason = OutcomeClientAbort, ""
	}
	if !s.usage {
		r.Tokens = s.chunks
		r.Estimated = s.chunks > 0
	}
	if !s.usage && r.PromptTokens == 0 {
		r.PromptTokens = -1
	}
	m := s.p.Metrics
	m.requests.WithLabelValues(r.Outcome).Inc()
	if r.Outcome == OutcomeUpstreamError {
		m.upstreamErrors.WithLabelValues(r.Reason).Inc()
	}
	if r.Estimated {
		m.estimated.Inc()
	}
	if r.Outcome == OutcomeRejected || s.p.opts.Sink == nil {
		return
	}
	s.p.opts.Sink(r)
}

// countReader passes an error response through, timing it.
type countReader struct {
	s    *stream
	body io.ReadCloser
}

func (c *countReader) Read(p []byte) (int, error) { return c.s.read(c.body, p) }
func (c *countReader) Close() error               { return c.body.Close() }

// jsonReader passes a whole (not streamed) response through, keeping up to
// max bytes of it to read its usage at the end.
type jsonReader struct {
	s    *stream
	body io.ReadCloser
	buf  []byte
	max  int
	over bool
}

func (j *jsonReader) Read(p []byte) (int, error) {
	n, err := j.s.read(j.body, p)
	if n > 0 {
		j.s.first()
		if !j.over {
			if len(j.buf)+n > j.max {
				j.over, j.buf = true, nil
			} else {
				j.buf = append(j.buf, p[:n]...)
			}
		}
	}
	if err == io.EOF && !j.over {
		j.s.fold(j.buf)
		j.buf = nil
	}
	return n, err
}

func (j *jsonReader) Close() error { return j.body.Close() }

// sseReader passes a server-sent event stream through, event by event.
// Whole events are handed on as soon as they are read (an engine writes
// one per chunk), a partial one is held until its end, at most max bytes:
// past that the stream is passed on unparsed and called malformed.
type sseReader struct {
	s       *stream
	body    io.ReadCloser
	max     int
	pending []byte // a partial event, held
	out     []byte // events ready to hand on
	raw     bool   // past max: no more parsing
}

func (r *sseReader) Close() error { return r.body.Close() }

func (r *sseReader) Read(p []byte) (int, error) {
	for {
		if len(r.out) > 0 {
			n := copy(p, r.out)
			r.out = r.out[n:]
			return n, nil
		}
		n, err := r.s.read(r.body, p)
		if r.raw {
			return n, err
		}
		if n > 0 {
			var data []byte
			if len(r.pending) == 0 {
				data = p[:n]
			} else {
				r.pending = append(r.pending, p[:n]...)
				data = r.pending
			}
			end, kept, stripped := r.scan(data, err == io.EOF)
			tail := data[end:]
			if len(tail) > r.max {
				// An event past the cap: forward it as it is, parse no more.
				r.s.malformed, r.raw = true, true
				kept, tail = append(kept, tail...), nil
			}
			if len(r.pending) == 0 && !stripped && len(tail) == 0 {
				// Fast path: the read held whole events and nothing was
				// stripped; they are already in p.
				return len(kept), err
			}
			r.out = append(r.out[:0], kept...)
			r.pending = append(r.pending[:0], tail...)
			if len(r.pending) == 0 && cap(r.pending) > 64<<10 {
				r.pending = nil
			}
		}
		if err != nil {
			if len(r.out) > 0 {
				// Hand on what is ready first; the error comes back on the
				// next read of the body.
				n := copy(p, r.out)
				r.out = r.out[n:]
				return n, nil
			}
			return 0, err
		}
	}
}

// scan parses the whole events at the start of data and returns where
// they end and the bytes to hand on: data[:end] unless an event was
// stripped, then a copy without it.
// At eof a last event without its blank line is complete too.
func (r *sseReader) scan(data []byte, eof bool) (end int, kept []byte, stripped bool) {
	kept = data[:0]
	start := 0 // of the current event
	var name []byte
	var payload []byte
	multi := false
	line := 0
	for line < len(data) {
		i := bytes.IndexByte(data[line:], '\n')
		if i < 0 {
			break
		}
		l := bytes.TrimSuffix(data[line:line+i], []byte("\r"))
		next := line + i + 1
		if len(l) == 0 {
			strip := r.event(name, payload)
			if strip {
				stripped = true
			} else if stripped {
				kept = append(kept, data[start:next]...)
			} else {
				kept = data[:next]
			}
			start, name, payload, multi = next, nil, nil, false
		} else {
			field, value, _ := bytes.Cut(l, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "data":
				if payload != nil || multi {
					payload = append(append(append([]byte(nil), payload...), '\n'), value...)
				} else {
					payload = value
				}
				multi = true
			case "event":
				name = value
			}
		}
		line = next
	}
	if eof && start < len(data) {
		if line < len(data) {
			l := bytes.TrimSuffix(data[line:], []byte("\r"))
			if field, value, _ := bytes.Cut(l, []byte(":")); string(field) == "data" {
				payload = bytes.TrimPrefix(value, []byte(" "))
			}
		}
		r.event(name, payload)
		if stripped {
			kept = append(kept, data[start:]...)
		} else {
			kept = data
		}
		start = len(data)
	}
	if stripped {
		// kept was built by appending into data's own prefix; copy it out
		// of the way of the tail.
		kept = append([]byte(nil), kept...)
	}
	return start, kept, stripped
}

// event folds one event; true when it is to be stripped.
func (r *sseReader) event(name, payload []byte) bool {
	if string(name) == "error" {
		r.s.errEvent = true
	}
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || string(payload) == "[DONE]" {
		return false
	}
	return r.s.fold(payload)
}
