package collector

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/fetch"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Reasons a scrape fails, the values of the reason label of
// goodput_exporter_target_scrape_errors_total.
const (
	ReasonTimeout       = "timeout"
	ReasonConnect       = "connect"
	ReasonHTTPStatus    = "http_status"
	ReasonBodyTooLarge  = "body_too_large"
	ReasonRedirect      = "redirect"
	ReasonRead          = "read"
	ReasonParse         = "parse"
	ReasonUnknownEngine = "unknown_engine"
	// ReasonMultipleEngines: the URL answers from more than one engine
	// process (a load-balanced service), so its counters cannot be
	// followed.
	ReasonMultipleEngines = "multiple_engines"
)

// ScrapeReasons lists every reason, so that error counters can start at 0.
var ScrapeReasons = []string{ReasonTimeout, ReasonConnect, ReasonHTTPStatus, ReasonBodyTooLarge, ReasonRedirect, ReasonRead, ReasonParse, ReasonUnknownEngine, ReasonMultipleEngines, ReasonWrongEngine, ReasonNoFamilies, ReasonSelfScrape}

// ScrapeError is a failed scrape with the reason it is counted under.
type ScrapeError struct {
	Reason string
	Err    error
}

func (e *ScrapeError) Error() string { return e.Err.Error() }
func (e *ScrapeError) Unwrap() error { return e.Err }

// acceptHeader asks for the classic text format first; OpenMetrics 1.0 is
// read as well (newer vLLM frontends serve it).
const acceptHeader = "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.8,*/*;q=0.1"

// ScraperConfig describes one target.
type ScraperConfig struct {
	Name    string
	URL     string
	Engine  snapshot.Engine // empty: detect from the first body
	Timeout time.Duration
	MaxBody int64
	Parse   ParseOptions
	// Transport is shared between targets; nil uses a default one.
	Transport http.RoundTripper
	// Budget bounds the bodies held at once, shared between targets; nil
	// gives the scraper one of its own, large enough for one body.
	Budget *fetch.Budget
}

// Scraper fetches and parses one target. It is not safe for concurrent
// use: one goroutine per target owns it.
type Scraper struct {
	cfg    ScraperConfig
	client *http.Client
	parser *Parser
	// body is the body being parsed, held only for the scrape: the budget
	// gets it back, and nothing of it is kept, when the scrape ends.
	body *fetch.Body
	// usual is the size of the last body parsed successfully: the next
	// read of unknown length starts with room for it.
	usual int
	prev  *snapshot.Snapshot
	cont  Continuity
}

// NewScraper checks the URL and prepares a client with the daemon's fetch
// policy (internal/fetch): no redirect off the target's host, no proxy
// from the environment.
func NewScraper(cfg ScraperConfig) (*Scraper, error) {
	if _, err := url.Parse(cfg.URL); err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Name, err)
	}
	if cfg.MaxBody <= 0 {
		return nil, fmt.Errorf("target %s: body cap must be positive", cfg.Name)
	}
	client, err := fetch.NewClient(cfg.URL, cfg.Transport)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Name, err)
	}
	if cfg.Budget == nil {
		cfg.Budget = fetch.NewBudget(2*cfg.MaxBody + 1<<20)
	}
	s := &Scraper{cfg: cfg, client: client}
	if cfg.Engine != "" {
		if s.parser, err = NewParser(cfg.Engine, cfg.Parse); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetModelLimit sets the most models the parser holds (ParseOptions'
// ModelLimit) from the next body on: a model already held stays, a new
// one past the limit is left out and counted as past model_limit. The
// daemon lowers it below a target's model_limit when the targets together
// hold as many models as it keeps.
func (s *Scraper) SetModelLimit(n int) {
	s.cfg.Parse.ModelLimit = n
	if s.parser != nil {
		s.parser.opts.ModelLimit = n
	}
}

// Models returns how many models the parser holds: those of its last body.
func (s *Scraper) Models() int {
	if s.parser == nil {
		return 0
	}
	return len(s.parser.models)
}

// Engine returns the engine in use, "" until detected.
func (s *Scraper) Engine() snapshot.Engine {
	if s.parser == nil {
		return ""
	}
	return s.parser.Engine()
}

// Result is one scrape's outcome besides the snapshot.
type Result struct {
	// Detected is set on the scrape that detected the engine.
	Detected snapshot.Engine
	// Restart says why the snapshot is a new process whose counts are all
	// recent (Snapshot.Restarted).
	Restart string
	// Baseline says why the snapshot's counts are of unknown age and only
	// set baselines (Snapshot.Baseline).
	Baseline string
	// Bytes is the size of the (decompressed) body.
	Bytes int
}

// Scrape fetches the target once and returns its snapshot.
func (s *Scraper) Scrape(ctx context.Context) (*snapshot.Snapshot, Result, error) {
	var res Result
	defer s.release()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ct, header, err := s.fetch(ctx)
	if err != nil {
		return nil, res, err
	}
	body := s.body.Bytes()
	res.Bytes = len(body)
	if err := selfScrape(body); err != nil {
		return nil, res, err
	}
	if s.parser == nil {
		e, ok := Detect(body)
		if !ok {
			return nil, res, &ScrapeError{ReasonUnknownEngine, errors.New("no engine's metrics in the body (at least two lines with vllm:, sglang:, llamacpp:, tgi_, nv_inference_, trtllm_, dynamo_frontend_ or another engine's prefix); set engine: explicitly if this is an engine")}
		}
		if s.parser, err = NewParser(e, s.cfg.Parse); err != nil {
			return nil, res, &ScrapeError{ReasonUnknownEngine, err}
		}
		res.Detected = e
	}
	now := time.Now()
	dl, _ := ctx.Deadline()
	s.parser.SetDeadline(dl)
	snap, err := s.parser.Parse(body, ct, now)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, res, &ScrapeError{ReasonTimeout, fmt.Errorf("the body (%d bytes) could not be parsed within the target's timeout of %v: %w", len(body), s.cfg.Timeout, err)}
	}
	if err != nil {
		return nil, res, &ScrapeError{ReasonParse, err}
	}
	changed := ""
	if s.cfg.Engine == "" && len(snap.Models) == 0 {
		changed = s.redetect(body, ct, now, &snap)
		if changed != "" {
			res.Detected = s.parser.Engine()
		}
	}
	if err := judgeEmpty(s.parser.tab, body, snap); err != nil {
		return nil, res, err
	}
	snap.Target = s.cfg.Name
	if snap.ProcessStart == 0 {
		// llama-server sends its start time as a header.
		// Its value is llama-server's start in microseconds of the
		// monotonic clock since boot (t_start = ggml_time_us()), not
		// Unix seconds: a token naming the process.
		if v, err := strconv.ParseFloat(header.Get("Process-Start-Time-Unix"), 64); err == nil {
			snap.ProcessStart = v
			snap.ProcessToken = s.parser.Engine() == snapshot.LlamaCPP
		}
	}
	s.usual = len(body)
	v := s.cont.Judge(s.prev, snap)
	s.prev = snap
	if v.Flip != nil {
		return nil, res, v.Flip
	}
	res.Restart, res.Baseline = v.Restart, v.Baseline
	if changed != "" && v.Flip == nil {
		snap.Restarted, snap.Baseline, snap.NoReset = false, true, false
		res.Restart, res.Baseline = "", changed+": its counts are of unknown age and only set the baseline"
	}
	return snap, res, nil
}

// release gives the body back to the budget when the scrape ends: no
// read buffer outlives its scrape, so a target keeps no high-water mark
// of a large answer (a refused 100 MB body once pinned 32 MiB per target).
func (s *Scraper) release() {
	s.body.Release()
	s.body = nil
}

// redetect handles a detected engine that yields nothing: when the body now
// comes from another engine (a redeployment behind the same address), it
// switches parsers. The new engine's counters have nothing to do with the
// old one's and are of unknown age, so the caller marks the snapshot as a
// baseline.
func (s *Scraper) redetect(body []byte, ct string, now time.Time, snap **snapshot.Snapshot) string {
	e, ok := Detect(body)
	old := s.parser.Engine()
	if !ok || e == old {
		return ""
	}
	p, err := NewParser(e, s.cfg.Parse)
	if err != nil {
		return ""
	}
	p.SetDeadline(s.parser.deadline)
	fresh, err := p.Parse(body, ct, now)
	if err != nil {
		return ""
	}
	s.parser, *snap, s.prev = p, fresh, nil
	s.cont = Continuity{}
	return fmt.Sprintf("the engine changed from %s to %s", old, e)
}

func (s *Scraper) fetch(ctx context.Context) (string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return "", nil, &ScrapeError{ReasonConnect, err}
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", "goodput-exporter")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", strconv.FormatFloat(s.cfg.Timeout.Seconds(), 'f', -1, 64))
	resp, err := s.client.Do(req)
	if err != nil {
		return "", nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		msg := fmt.Sprintf("HTTP %s", resp.Status)
		if resp.StatusCode == http.StatusNotImplemented {
			msg += " (llama-server serves /metrics only when started with --metrics)"
		}
		if t := strings.TrimSpace(string(snippet)); t != "" {
			msg += ": " + t
		}
		return "", nil, &ScrapeError{ReasonHTTPStatus, errors.New(msg)}
	}
	s.body, err = s.cfg.Budget.Read(ctx, resp.Body, resp.ContentLength, s.cfg.MaxBody, int64(s.usual))
	switch {
	case errors.Is(err, fetch.ErrBodyTooLarge):
		return "", nil, &ScrapeError{ReasonBodyTooLarge, fmt.Errorf("%w (max_body_size)", err)}
	case errors.Is(err, fetch.ErrBudget):
		return "", nil, &ScrapeError{ReasonBodyTooLarge, fmt.Errorf("body too large for now: %w (the bodies in flight over all targets, --collect.body-budget)", err)}
	case err != nil:
		return "", nil, classify(ctx, fmt.Errorf("reading body: %w", err))
	}
	return resp.Header.Get("Content-Type"), resp.Header, nil
}

func classify(ctx context.Context, err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, fetch.ErrRedirectOffHost):
		return &ScrapeError{ReasonRedirect, err}
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &ScrapeError{ReasonTimeout, fmt.Errorf("timed out: %w", err)}
	case strings.HasPrefix(err.Error(), "reading body"):
		return &ScrapeError{ReasonRead, err}
	}
	return &ScrapeError{ReasonConnect, err}
}
