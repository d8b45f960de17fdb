package proxy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// requestFields are what the proxy reads from a completion request.
type requestFields struct {
	Model         string          `json:"model"`
	Stream        bool            `json:"stream"`
	StreamOptions json.RawMessage `json:"stream_options"`
	N             *int64          `json:"n"`
	MaxTokens     *int64          `json:"max_tokens"`
	MaxCompletion *int64          `json:"max_completion_tokens"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// readRequest records what the request asks for and returns the body to
// send upstream: the client's, byte for byte, unless it is a stream that
// did not ask for usage and inject is set; then stream_options.include_usage
// is added, and the usage-only chunk it brings is stripped on the way back.
// A body that is not a JSON object is forwarded unchanged (the upstream
// answers it).
func (s *stream) readRequest(body []byte, inject bool) []byte {
	var f requestFields
	if err := json.Unmarshal(body, &f); err != nil {
		return body
	}
	s.rec.Model, s.rec.Stream = f.Model, f.Stream
	if f.N != nil && *f.N > 0 {
		s.rec.N = *f.N
	}
	switch {
	case f.MaxCompletion != nil && *f.MaxCompletion > 0:
		s.rec.MaxTokens = *f.MaxCompletion
	case f.MaxTokens != nil && *f.MaxTokens > 0:
		s.rec.MaxTokens = *f.MaxTokens
	}
	if !f.Stream || !inject {
		return body
	}
	opts := bytes.TrimSpace(f.StreamOptions)
	if len(opts) == 0 || bytes.Equal(opts, []byte("null")) {
		if len(opts) == 0 {
			// No stream_options at all: splice the member in after the
			// opening brace, leaving every other byte as the client sent it.
			i := bytes.IndexByte(body, '{')
			out := make([]byte, 0, len(body)+40)
			out = append(out, body[:i+1]...)
			out = append(out, `"stream_options":{"include_usage":true},`...)
			out = append(out, body[i+1:]...)
			s.strip = true
			return out
		}
	} else {
		var so streamOptions
		if json.Unmarshal(opts, &so) != nil {
			return body
		}
		if so.IncludeUsage {
			return body // the client asked: it gets the chunk
		}
	}
	// stream_options present (null, or without include_usage): rewrite
	// that one member, keeping the others.
	var whole map[string]json.RawMessage
	if json.Unmarshal(body, &whole) != nil {
		return body
	}
	so := map[string]json.RawMessage{}
	if !bytes.Equal(opts, []byte("null")) && json.Unmarshal(opts, &so) != nil {
		return body
	}
	so["include_usage"] = json.RawMessage("true")
	var err error
	if whole["stream_options"], err = json.Marshal(so); err != nil {
		return body
	}
	out, err := json.Marshal(whole)
	if err != nil {
		return body
	}
	s.strip = true
	return out
}

// traceParent reads a W3C traceparent header, so that the request's span
// joins the client's trace; zero ids when absent or invalid.
func traceParent(h string) (trace [16]byte, parent [8]byte) {
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) < 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return trace, parent
	}
	t, err1 := hex.DecodeString(parts[1])
	p, err2 := hex.DecodeString(parts[2])
	if err1 != nil || err2 != nil {
		return [16]byte{}, [8]byte{}
	}
	copy(trace[:], t)
	copy(parent[:], p)
	return trace, parent
}
