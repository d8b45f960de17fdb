package collector

import (
	"bytes"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// enginePrefixes are the metric-name prefixes that identify an engine.
var enginePrefixes = []struct {
	engine snapshot.Engine
	prefix []byte
}{
	{snapshot.VLLM, []byte("vllm:")},
	{snapshot.SGLang, []byte("sglang:")},
	{snapshot.SGLang, []byte("sglang_")},
	{snapshot.LlamaCPP, []byte("llamacpp:")},
	{snapshot.TGI, []byte("tgi_")},
	{snapshot.Triton, []byte("nv_trt_llm_")},
	{snapshot.Triton, []byte("nv_inference_")},
	{snapshot.TRTLLM, []byte("trtllm_")},
	{snapshot.TRTLLM, []byte("trtllm:")},
	{snapshot.Dynamo, []byte("dynamo_frontend_")},
	{snapshot.Dynamo, []byte("nv_llm_http_service_")},
}

// minDetectLines is how many sample lines of an engine's prefixes a body
// must hold for that engine to be detected: one stray line (a Dynamo
// worker re-exporting one trtllm_ gauge) does not make an engine.
const minDetectLines = 2

// Detect names the engine that produced a /metrics body from the prefix
// of its metric names: of the engines with at least minDetectLines sample
// lines, the one whose first sample or TYPE line comes earliest. It
// returns false when no engine has that many.
func Detect(body []byte) (snapshot.Engine, bool) {
	lines := map[snapshot.Engine]int{}
	for _, ep := range enginePrefixes {
		lines[ep.engine] += countLines(body, ep.prefix, minDetectLines)
	}
	best, found := -1, snapshot.Engine("")
	for _, ep := range enginePrefixes {
		if lines[ep.engine] < minDetectLines {
			continue
		}
		i := lineStartIndex(body, ep.prefix)
		if i >= 0 && (best < 0 || i < best) {
			best, found = i, ep.engine
		}
	}
	return found, best >= 0
}

// countLines counts the lines that start with prefix, up to limit.
func countLines(body, prefix []byte, limit int) int {
	n := 0
	if bytes.HasPrefix(body, prefix) {
		n++
	}
	pat := append([]byte{'\n'}, prefix...)
	for rest := body; n < limit; n++ {
		i := bytes.Index(rest, pat)
		if i < 0 {
			break
		}
		rest = rest[i+len(pat):]
	}
	return min(n, limit)
}

// lineStartIndex finds prefix at the start of a line, either as a sample
// or after "# TYPE ".
func lineStartIndex(body, prefix []byte) int {
	if bytes.HasPrefix(body, prefix) {
		return 0
	}
	first := -1
	for _, lead := range [][]byte{{'\n'}, []byte("# TYPE ")} {
		pat := append(append([]byte{}, lead...), prefix...)
		if i := bytes.Index(body, pat); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}
