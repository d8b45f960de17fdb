//go:build realtools

package capacity

// The real load generators against a test engine: `make capacity-realtools`
// installs AIPerf (pinned) in a virtual environment and runs this test
// with CAPACITY_TOOLS_VENV pointing at it; `make
// capacity-realtools-guidellm` does the same for GuideLLM
// (CAPACITY_GUIDELLM_VENV). Neither is part of `make test`: the installs
// are one and six gigabytes and each run takes minutes.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// testEngine is an OpenAI-compatible engine with a real continuous-
// batching queue: slots sequences run at once, each step gives every
// running sequence one token and takes base + perSeq × the batch, and a
// request waits for a free slot. Its first token comes at the end of its
// first step.
type testEngine struct {
	slots        int
	base, perSeq time.Duration

	mu      sync.Mutex
	waiting []*job
	wake    chan struct{}
}

type job struct {
	left   int
	tokens chan struct{}
}

func newTestEngine(t *testing.T, slots int, base, perSeq time.Duration) *testEngine {
	e := &testEngine{slots: slots, base: base, perSeq: perSeq, wake: make(chan struct{}, 1)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go e.loop(done)
	return e
}

func (e *testEngine) loop(done chan struct{}) {
	var running []*job
	for {
		e.mu.Lock()
		for len(running) < e.slots && len(e.waiting) > 0 {
			running = append(running, e.waiting[0])
			e.waiting = e.waiting[1:]
		}
		e.mu.Unlock()
		if len(running) == 0 {
			select {
			case <-e.wake:
				continue
			case <-done:
				return
			}
		}
		time.Sleep(e.base + time.Duration(len(running))*e.perSeq)
		kept := running[:0]
		for _, j := range running {
			j.tokens <- struct{}{}
			if j.left--; j.left > 0 {
				kept = append(kept, j)
			} else {
				close(j.tokens)
			}
		}
		running = kept
	}
}

func (e *testEngine) submit(n int) *job {
	j := &job{left: n, tokens: make(chan struct{}, n)}
	e.mu.Lock()
	e.waiting = append(e.waiting, j)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return j
}

func (e *testEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"test-engine","object":"model"}]}`)
		return
	case "/v1/chat/completions", "/v1/completions":
	case "/health":
		return
	default:
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens *int   `json:"max_tokens"`
		MaxCompl  *int   `json:"max_completion_tokens"`
		Stream    bool   `json:"stream"`
		Messages  []struct {
			Content any `json:"content"`
		} `json:"messages"`
		Prompt any `json:"prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := 32
	if req.MaxCompl != nil {
		n = *req.MaxCompl
	} else if req.MaxTokens != nil {
		n = *req.MaxTokens
	}
	n = max(n, 1)
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(strings.Fields(fmt.Sprint(m.Content)))
	}
	prompt += len(strings.Fields(fmt.Sprint(req.Prompt)))
	chat := r.URL.Path == "/v1/chat/completions"
	j := e.submit(n)
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, prompt, n, prompt+n)
	if !req.Stream {
		for range j.tokens {
		}
		text := strings.Repeat("the ", n)
		if chat {
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"length"}],"usage":%s}`, req.Model, text, usage)
		} else {
			fmt.Fprintf(w, `{"id":"c","object":"text_completion","model":%q,"choices":[{"index":0,"text":%q,"finish_reason":"length"}],"usage":%s}`, req.Model, text, usage)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for range j.tokens {
		if chat {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"the \"},\"finish_reason\":null}]}\n\n", req.Model)
		} else {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"text_completion\",\"model\":%q,\"choices\":[{\"index\":0,\"text\":\"the \",\"finish_reason\":null}]}\n\n", req.Model)
		}
		if fl != nil {
			fl.Flush()
		}
	}
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[],\"usage\":%s}\n\ndata: [DONE]\n\n", req.Model, usage)
}

// tokenizerPy writes a local tokenizer (a word-level vocabulary split on
// whitespace) in the layout Hugging Face's AutoTokenizer loads, since the
// tools cannot reach a model hub.
const tokenizerPy = `
import json, sys
from tokenizers import Tokenizer, models, pre_tokenizers
words = ["[UNK]"] + "the of and to a in is it you that he was for on are with as his they be at one have this from or had by word but what some we can out other were all there when up use your how said an each she which do their time if will way about many then them write would like so these her long make thing see him two has look more day could go come did number sound no most people my over know water than call first who may down side been now find".split()
vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
d = sys.argv[1]
tok.save(d + "/tokenizer.json")
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 1000000}, open(d + "/tokenizer_config.json", "w"))
`

func runAIPerf(t *testing.T, venv, url, tokenizer, dir string, args ...string) string {
	t.Helper()
	out := filepath.Join(dir, strings.Join(args, "_"))
	cmd := exec.Command(filepath.Join(venv, "bin", "aiperf"), append([]string{"profile", "--model", "test-engine", "--url", url,
		"--endpoint-type", "chat", "--streaming", "--tokenizer", tokenizer, "--isl", "64", "--isl-stddev", "16",
		"--osl", "32", "--osl-stddev", "8", "--extra-inputs", "ignore_eos:true", "--random-seed", "7",
		"--ui-type", "none", "--no-gpu-telemetry", "--no-server-metrics", "--artifact-dir", out}, args...)...)
	// not HF_HUB_OFFLINE: AIPerf then looks the tokenizer up in the hub's
	// cache, not at its path; a local path is loaded without the hub
	cmd.Env = os.Environ()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("aiperf %v: %v\n%s", args, err, b)
	}
	var found string
	_ = filepath.Walk(out, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "profile_export_aiperf.json" {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("aiperf %v wrote no profile_export_aiperf.json:\n%s", args, b)
	}
	return found
}

// realToolSetup skips unless env names the tool's virtual environment
// (make target installs it), and starts the test engine (8 slots, steps
// of 20 ms + 2 ms a sequence) with a directory and a tokenizer for the
// tool to read.
func realToolSetup(t *testing.T, env, target string) (venv string, srv *httptest.Server, dir, tok string) {
	t.Helper()
	venv = os.Getenv(env)
	if venv == "" {
		t.Skip(env + " is not set: run make " + target)
	}
	eng := newTestEngine(t, 8, 20*time.Millisecond, 2*time.Millisecond)
	srv = httptest.NewServer(eng)
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	tok = filepath.Join(dir, "tokenizer")
	_ = os.MkdirAll(tok, 0o755)
	if b, err := exec.Command(filepath.Join(venv, "bin", "python"), "-c", tokenizerPy, tok).CombinedOutput(); err != nil {
		t.Fatalf("tokenizer: %v\n%s", err, b)
	}
	return venv, srv, dir, tok
}

// TestRealToolsAIPerf: AIPerf drives the test engine (8 slots, steps of
// 20 ms + 2 ms a sequence) in a closed loop of 2 and 8 clients and in an
// open loop (Poisson) at the closed loop's achieved rate, and the report
// is read from the files it writes: the closed-loop runs are labelled,
// with their achieved rates; the open loop decides the capacity; and the
// closed loop's TTFT tail is below the open loop's at the same rate.
func TestRealToolsAIPerf(t *testing.T) {
	venv, srv, dir, tok := realToolSetup(t, "CAPACITY_TOOLS_VENV", "capacity-realtools")
	c2 := runAIPerf(t, venv, srv.URL, tok, dir, "--concurrency", "2", "--request-count", "40", "--warmup-request-count", "4")
	c8 := runAIPerf(t, venv, srv.URL, tok, dir, "--concurrency", "8", "--request-count", "160", "--warmup-request-count", "8")
	achieved := rawField(t, c8, "request_throughput", "avg")
	lo := runAIPerf(t, venv, srv.URL, tok, dir, "--request-rate", fmt.Sprintf("%.2f", achieved/2), "--request-rate-mode", "poisson", "--request-count", "100", "--warmup-request-count", "4")
	hi := runAIPerf(t, venv, srv.URL, tok, dir, "--request-rate", fmt.Sprintf("%.2f", achieved), "--request-rate-mode", "poisson", "--request-count", "160", "--warmup-request-count", "8")
	// CAPACITY_TOOLS_KEEP=1 keeps what AIPerf wrote as testdata, for the
	// tests that run without the tool (TestAIPerfWrittenFiles)
	if os.Getenv("CAPACITY_TOOLS_KEEP") != "" {
		for name, f := range map[string]string{"concurrency2": c2, "concurrency8": c8, "poisson-half": lo, "poisson-same": hi} {
			keep := filepath.Join("testdata", "real", "aiperf", "0.13.0-testengine-"+name)
			_ = os.MkdirAll(keep, 0o755)
			for _, base := range []string{"profile_export_aiperf.json", "profile_export.jsonl"} {
				if b, err := os.ReadFile(filepath.Join(filepath.Dir(f), base)); err == nil {
					_ = os.WriteFile(filepath.Join(keep, base), b, 0o644)
				}
			}
		}
	}
	slo := goodput.SLO{Name: "chat", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.3, Target: 0.95}}}
	files := []string{filepath.Dir(c2), filepath.Dir(c8), filepath.Dir(lo), filepath.Dir(hi)}
	sw, err := Read(files...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := JudgeEach(sw, slo)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Report(&out, ReportOptions{Files: files, SLO: slo}); err != nil {
		t.Fatal(err)
	}
	t.Logf("report on AIPerf's files:\n%s", out.String())
	if len(res) != 2 || !res[1].ClosedLoop() || res[0].ClosedLoop() {
		t.Fatalf("sweeps: %d", len(res))
	}
	for i, f := range []string{c2, c8} {
		if got, how := res[1].Points[i].AchievedRate(); got != rawField(t, f, "request_throughput", "avg") || how != "measured" {
			t.Errorf("closed loop %d: achieved %v (%s)", i, got, how)
		}
	}
	if !strings.Contains(out.String(), "the open loop decides the capacity") || !strings.Contains(out.String(), "warning: measured in a closed loop of 8 clients") {
		t.Errorf("report:\n%s", out.String())
	}
	closedP99 := rawField(t, c8, "time_to_first_token", "p99")
	openP99 := rawField(t, hi, "time_to_first_token", "p99")
	openRate := rawField(t, hi, "request_throughput", "avg")
	t.Logf("closed loop of 8: %.2f req/s, TTFT P99 %.0f ms; open loop (Poisson): %.2f req/s, TTFT P99 %.0f ms", achieved, closedP99, openRate, openP99)
	if !within(openRate, achieved, 0.15) {
		t.Errorf("the open loop achieved %v req/s, not the closed loop's %v", openRate, achieved)
	}
	if !(closedP99 < openP99) {
		t.Errorf("the closed loop's TTFT P99 %v ms is not below the open loop's %v ms at the same rate", closedP99, openP99)
	}
}

// runGuideLLM runs `guidellm run` on a scenario (the CLI of 0.8 takes
// kind=… arguments; a scenario file says the same in JSON) and returns the
// report it wrote.
func runGuideLLM(t *testing.T, venv, url, tokenizer, dir, name string, profile map[string]any, benchmarks []map[string]any, requests int) string {
	t.Helper()
	out := filepath.Join(dir, name+".json")
	sc := map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"backend":     map[string]any{"kind": "openai_http", "target": url, "model": "test-engine", "request_format": "/v1/chat/completions"},
			"tokenizer":   map[string]any{"kind": "huggingface_auto", "model": tokenizer},
			"profile":     profile,
			"data":        []any{map[string]any{"kind": "synthetic_text", "prompt_tokens": 64, "prompt_tokens_stdev": 16, "output_tokens": 32, "output_tokens_stdev": 8}},
			"constraints": []any{map[string]any{"kind": "max_requests", "count": requests}},
			"outputs":     []any{map[string]any{"kind": "json", "path": out}},
		},
	}
	if benchmarks != nil {
		sc["benchmarks"] = benchmarks
	}
	scf := filepath.Join(dir, name+"-scenario.json")
	_ = os.WriteFile(scf, must(json.Marshal(sc)), 0o644)
	cmd := exec.Command(filepath.Join(venv, "bin", "guidellm"), "run", "--scenario", scf, "--output", "kind=json,path="+out,
		"--disable-console-interactive")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("guidellm %s: %v\n%s", name, err, b)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("guidellm %s wrote no report:\n%s", name, b)
	}
	return out
}

// TestRealToolsGuideLLM: GuideLLM drives the same engine with a concurrent
// profile (2 and 8 streams) and a Poisson profile at the 8-stream run's
// achieved rate; the report read from its files labels the concurrent
// rounds closed loops and lets the Poisson rounds decide.
func TestRealToolsGuideLLM(t *testing.T) {
	venv, srv, dir, tok := realToolSetup(t, "CAPACITY_GUIDELLM_VENV", "capacity-realtools-guidellm")
	conc := runGuideLLM(t, venv, srv.URL, tok, dir, "concurrent", map[string]any{"kind": "concurrent", "streams": []int{2, 8}}, nil, 80)
	sw, err := Read(conc)
	if err != nil {
		t.Fatal(err)
	}
	achieved := sw.Points[len(sw.Points)-1].Rate
	pois := runGuideLLM(t, venv, srv.URL, tok, dir, "poisson", map[string]any{"kind": "poisson", "rate": []float64{achieved / 2, achieved}}, nil, 80)
	if os.Getenv("CAPACITY_TOOLS_KEEP") != "" {
		for _, f := range []string{conc, pois} {
			_ = os.WriteFile(filepath.Join("testdata", "real", "guidellm", "0.8.1-testengine-"+filepath.Base(f)), must(os.ReadFile(f)), 0o644)
		}
	}
	var out strings.Builder
	if err := Report(&out, ReportOptions{Files: []string{conc, pois}, SLO: chatSLOp95}); err != nil {
		t.Fatal(err)
	}
	t.Logf("report on GuideLLM's files:\n%s", out.String())
	if !strings.Contains(out.String(), "the open loop decides the capacity") || !strings.Contains(out.String(), "warning: measured in a closed loop of 8 clients") {
		t.Errorf("report:\n%s", out.String())
	}
}
