package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// MaxLabelValue is the longest label value, in bytes, the daemon takes
// from an engine (a model name, a finish reason) or a trace: long enough
// for any Hugging Face model ID (96 + 1 + 96 bytes) or a local model
// path, short enough that a hostile engine's 256 KiB names cannot inflate
// every series of a model (and /metrics with them) a thousandfold.
const MaxLabelValue = 512

// labelHash is how many hex digits of the value's SHA-256 a shortened
// value ends with.
const labelHash = 16

// CapLabelValue returns v unchanged when it is at most MaxLabelValue
// bytes; otherwise its first bytes (cut at a UTF-8 character boundary),
// "…", and the first 16 hex digits of the SHA-256 of the whole value,
// MaxLabelValue bytes at most, and true. Two long values that share their
// first 493 bytes stay apart, and the same value is shortened the same way
// on every scrape and by every source (engine series and trace spans).
func CapLabelValue(v string) (string, bool) {
	if len(v) <= MaxLabelValue {
		return v, false
	}
	const mark = "…"
	keep := MaxLabelValue - len(mark) - labelHash
	for keep > 0 && !utf8.RuneStart(v[keep]) {
		keep--
	}
	sum := sha256.Sum256([]byte(v))
	return v[:keep] + mark + hex.EncodeToString(sum[:])[:labelHash], true
}
