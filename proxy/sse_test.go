package proxy

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// pieces reads a body in the given piece sizes, as a network would split it.
type pieces struct {
	b     []byte
	sizes []int
}

func (p *pieces) Read(out []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	n := len(p.b)
	if len(p.sizes) > 0 {
		n, p.sizes = min(p.sizes[0], n), p.sizes[1:]
	}
	n = copy(out[:min(n, len(out))], p.b)
	p.b = p.b[n:]
	return n, nil
}

func (p *pieces) Close() error { return nil }

// However the stream is split into reads (an event across reads, several
// in one, CRLF line ends, a multi-line data field), what comes out is
// the stream without the usage chunk the proxy asked for, and the tokens,
// first token and finish reasons read are the same.
func TestSSEReaderSplits(t *testing.T) {
	var in strings.Builder
	in.WriteString(": keep-alive comment\n\n")
	for i := range 20 {
		in.WriteString(`data: {"model":"m","choices":[{"index":0,"delta":{"content":"t` + string(rune('a'+i)) + `"},"finish_reason":null}]}` + "\n\n")
	}
	in.WriteString("data: {\"choices\":[{\"index\":0,\n")
	in.WriteString("data: \"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n")
	usage := `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":20}}` + "\n\n"
	in.WriteString(usage)
	in.WriteString("data: [DONE]\n\n")
	full := in.String()
	want := strings.Replace(full, usage, "", 1)
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var sizes []int
		for range 200 {
			sizes = append(sizes, 1+rng.IntN(300))
		}
		p := &Proxy{opts: Options{Now: time.Now}, Metrics: NewMetrics()}
		s := &stream{p: p, strip: true, rec: Record{Arrival: time.Now()}}
		r := &sseReader{s: s, body: &pieces{b: []byte(full), sizes: sizes}, max: DefaultMaxEvent}
		var out bytes.Buffer
		buf := make([]byte, 1+rng.IntN(4096))
		for {
			n, err := r.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if out.String() != want {
			t.Fatalf("trial %d (reads %v…): got\n%q\nwant\n%q", trial, sizes[:5], out.String(), want)
		}
		if !s.usage || s.rec.Tokens != 20 || s.chunks != 20 || !s.rec.HasTTFT || s.malformed || s.errEvent || len(s.rec.FinishReasons) != 1 || s.rec.FinishReasons[0] != "stop" {
			t.Fatalf("trial %d: %+v chunks %d malformed %v", trial, s.rec, s.chunks, s.malformed)
		}
	}
}

// An event longer than the cap is passed on whole and unparsed, and the
// stream is called malformed; nothing is lost.
func TestSSEReaderOverCap(t *testing.T) {
	long := "data: {\"x\":\"" + strings.Repeat("a", 5000) + "\"}\n\n"
	full := `data: {"choices":[{"text":"a"}]}` + "\n\n" + long + `data: {"choices":[{"text":"b"}]}` + "\n\n"
	p := &Proxy{opts: Options{Now: time.Now}, Metrics: NewMetrics()}
	s := &stream{p: p, rec: Record{Arrival: time.Now()}}
	r := &sseReader{s: s, body: &pieces{b: []byte(full), sizes: []int{100, 100, 100}}, max: 1024}
	out, _ := io.ReadAll(r)
	if string(out) != full || !s.malformed || s.chunks != 1 {
		t.Fatalf("out %d bytes of %d, malformed %v, chunks %d", len(out), len(full), s.malformed, s.chunks)
	}
}
