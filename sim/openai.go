package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReplayHeader names the simulated request a completion request plays.
const ReplayHeader = "X-Sim-Request-Id"

// Replay serves an OpenAI-compatible streaming API (POST
// /v1/chat/completions) that plays finished simulated requests back on
// the wall clock, each as its record says: headers at once, the first
// token at the record's time to first token, the others at their
// inter-token gaps, all divided by Speed, then the finish reason, the
// usage when stream_options.include_usage asks for it, and [DONE]. Tokens
// due within Coalesce of each other share one chunk, so that a fast
// replay costs a few chunks per request, not one per token. A request
// that failed ends with an error event (an HTTP 500 before its first
// token); one the simulated client aborted is never finished: the player
// (Play) hangs up at its finish time.
//
// The simulated engine is a model in virtual time; this is how its
// requests reach something that speaks HTTP, such as the measuring proxy.
type Replay struct {
	Speed    float64
	Coalesce time.Duration
	Model    string

	mu   sync.Mutex
	recs map[uint64]Record
}

// MaxReplayPending bounds the records held for playing.
const MaxReplayPending = 65536

// Add holds a record for its request; false when MaxReplayPending are
// already held.
func (p *Replay) Add(r Record) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.recs == nil {
		p.recs = map[uint64]Record{}
	}
	if len(p.recs) >= MaxReplayPending {
		return false
	}
	p.recs[r.ID] = r
	return true
}

func (p *Replay) take(id uint64) (Record, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.recs[id]
	delete(p.recs, id)
	return r, ok
}

func (p *Replay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id, err := strconv.ParseUint(req.Header.Get(ReplayHeader), 10, 64)
	rec, ok := p.take(id)
	if err != nil || !ok || req.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"no such simulated request"}}`, http.StatusNotFound)
		return
	}
	var q struct {
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.Unmarshal(body, &q)
	speed := p.Speed
	if speed <= 0 {
		speed = 1
	}
	at := func(d time.Duration) time.Time { return start.Add(time.Duration(float64(d-rec.Arrival) / speed)) }
	ctx := req.Context()
	if !rec.HasFirstToken {
		if rec.Reason == FinishError {
			sleepUntil(ctx, at(rec.Finish))
			http.Error(w, `{"error":{"message":"request failed"}}`, http.StatusInternalServerError)
			return
		}
		<-ctx.Done() // the client gives up at its finish time
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()
	event := func(s string) {
		fmt.Fprintf(w, "data: %s\n\n", s)
		flush()
	}
	chunk := func(tokens int) string {
		return fmt.Sprintf(`{"object":"chat.completion.chunk","model":%q,"choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, p.Model, strings.Repeat("t", tokens))
	}
	// Token k (0-based) is due at FirstToken + the gaps before it.
	due := rec.FirstToken
	sent := 0
	for sent < rec.OutputTokens {
		if !sleepUntil(ctx, at(due)) {
			return
		}
		horizon := time.Now().Add(p.Coalesce)
		n := 0
		for sent+n < rec.OutputTokens && !at(due).After(horizon) {
			n++
			if k := sent + n - 1; k < len(rec.ITLs) {
				due += rec.ITLs[k]
			}
		}
		event(chunk(n))
		sent += n
	}
	switch rec.Reason {
	case FinishAbort:
		<-ctx.Done() // the client hangs up at its finish time
		return
	case FinishError:
		sleepUntil(ctx, at(rec.Finish))
		event(`{"error":{"message":"request failed","code":500}}`)
		return
	}
	if !sleepUntil(ctx, at(rec.Finish)) {
		return
	}
	event(fmt.Sprintf(`{"object":"chat.completion.chunk","model":%q,"choices":[{"index":0,"delta":{},"finish_reason":%q}]}`, p.Model, string(rec.Reason)))
	if q.StreamOptions != nil && q.StreamOptions.IncludeUsage {
		event(fmt.Sprintf(`{"object":"chat.completion.chunk","model":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			p.Model, rec.PromptTokens, rec.OutputTokens, rec.PromptTokens+rec.OutputTokens))
	}
	event("[DONE]")
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Play sends the record's request to an OpenAI-compatible base URL (a
// Replay, or a proxy in front of one) as its simulated client did, reads
// the stream, and hangs up at the record's finish time when the client
// aborted (speed as the Replay's). It returns the response's status, 0
// when there was none.
func Play(ctx context.Context, client *http.Client, base string, rec Record, model string, speed float64) (int, error) {
	if speed <= 0 {
		speed = 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if rec.Reason == FinishAbort {
		t := time.AfterFunc(time.Duration(float64(rec.Finish-rec.Arrival)/speed), cancel)
		defer t.Stop()
	}
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"messages":[{"role":"user","content":"simulated"}]}`, model, max(rec.MaxTokens, rec.OutputTokens))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ReplayHeader, strconv.FormatUint(rec.ID, 10))
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}
