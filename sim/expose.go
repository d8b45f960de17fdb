package sim

import (
	"fmt"
	"io"
)

// Format is an engine's exposition format.
type Format string

// Formats.
const (
	FormatVLLM     Format = "vllm"
	FormatSGLang   Format = "sglang"
	FormatLlamaCPP Format = "llamacpp"
	FormatTGI      Format = "tgi"
	FormatTriton   Format = "triton"
	FormatTRTLLM   Format = "trtllm"
	FormatDynamo   Format = "dynamo"
)

// Formats lists the engine formats, the default first.
var Formats = []Format{FormatVLLM, FormatSGLang, FormatLlamaCPP, FormatTGI, FormatTriton, FormatTRTLLM, FormatDynamo}

// ParseFormat accepts a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q (want vllm, sglang, llamacpp, tgi, triton, trtllm or dynamo)", s)
}

// ContentType is the text exposition media type every format uses.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteMetrics writes the engine's /metrics body in format f, from the
// cumulative state at the current virtual time.
func (e *Engine) WriteMetrics(w io.Writer, f Format) error {
	var body string
	switch f {
	case FormatVLLM:
		body = e.vllmText()
	case FormatSGLang:
		body = e.sglangText()
	case FormatLlamaCPP:
		body = e.llamacppText()
	case FormatTGI:
		body = e.tgiText()
	case FormatTriton:
		body = e.tritonText()
	case FormatTRTLLM:
		body = e.trtllmText()
	case FormatDynamo:
		body = e.dynamoText()
	default:
		_, err := ParseFormat(string(f))
		return err
	}
	_, err := io.WriteString(w, body)
	return err
}

// WriteGPUMetrics writes the GPU as dcgm-exporter 4.x exposes it.
func (e *Engine) WriteGPUMetrics(w io.Writer) error {
	_, err := io.WriteString(w, e.dcgmText())
	return err
}

// pyBool is how Python prints a bool into a label.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
