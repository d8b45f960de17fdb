package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// The readers decode leniently: a result file is a large object of which
// the judgement uses a few fields, and the tools add, move and retype the
// others between versions. Each used field is decoded on its own, so a
// field the reader does not use never fails a file; a used field that is
// present but of the wrong shape is an error naming it (fieldError).

// obj decodes raw as a JSON object; null or absent is an empty object.
func obj(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if isNull(raw) {
		return m, nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

func isNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// number decodes an optional number: absent or null is (0, false).
func number(raw json.RawMessage) (float64, bool, error) {
	if isNull(raw) {
		return 0, false, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, false, fmt.Errorf("not a number: %s", clip(raw))
	}
	return f, true, nil
}

// count decodes an optional count of requests: an integer, or a number
// with no fraction (AIPerf writes request_count as 96.0).
func count(raw json.RawMessage) (int, bool, error) {
	f, ok, err := number(raw)
	if err != nil || !ok {
		return 0, ok, err
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false, fmt.Errorf("not a count of requests: %s", clip(raw))
	}
	return int(f), true, nil
}

// path walks nested objects; a missing or null step yields nil.
func path(m map[string]json.RawMessage, keys ...string) (json.RawMessage, error) {
	var raw json.RawMessage
	for i, k := range keys {
		if i > 0 {
			var err error
			if m, err = obj(raw); err != nil {
				return nil, fmt.Errorf("%s: %w", strings.Join(keys[:i], "."), err)
			}
		}
		raw = m[k]
		if isNull(raw) {
			return nil, nil
		}
	}
	return raw, nil
}

func clip(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
