package proxy

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// fakeEngine is an OpenAI-compatible server whose every request says how
// it is to be answered, in headers the proxy forwards unchanged:
//
//	X-Fake-TTFT, X-Fake-ITL  delay before the first token, between tokens
//	X-Fake-Tokens            tokens per choice
//	X-Fake-Fault             status500, die (close mid-stream), hang
//	                         (never answer), malformed, error_event,
//	                         no_usage (ignore include_usage)
//
// Its output is a function of the request only, so a response through the
// proxy can be compared byte for byte with one taken directly.
type fakeEngine struct {
	cancelled atomic.Int64 // requests whose context ended before the stream did
	lastBody  atomic.Pointer[[]byte]
}

type fakeReq struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	N             int    `json:"n"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func hdrDur(r *http.Request, k string) time.Duration {
	d, _ := time.ParseDuration(r.Header.Get(k))
	return d
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	f.lastBody.Store(&body)
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/v1/completions" {
		fmt.Fprintf(w, "passthrough %s %d", r.URL.Path, len(body))
		return
	}
	var q fakeReq
	if err := json.Unmarshal(body, &q); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	chat := r.URL.Path == "/v1/chat/completions"
	n := max(q.N, 1)
	tokens, _ := strconv.Atoi(r.Header.Get("X-Fake-Tokens"))
	fault := r.Header.Get("X-Fake-Fault")
	ttft, itl := hdrDur(r, "X-Fake-TTFT"), hdrDur(r, "X-Fake-ITL")
	sleep := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-r.Context().Done():
			f.cancelled.Add(1)
			return false
		}
	}
	switch fault {
	case "status500":
		http.Error(w, `{"error":{"message":"engine down"}}`, http.StatusInternalServerError)
		return
	case "hang":
		<-r.Context().Done()
		f.cancelled.Add(1)
		return
	}
	usage := fmt.Sprintf(`{"prompt_tokens":7,"completion_tokens":%d,"total_tokens":%d}`, n*tokens, 7+n*tokens)
	if !q.Stream {
		if !sleep(ttft + time.Duration(max(tokens-1, 0))*itl) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var ch []string
		for i := range n {
			if chat {
				ch = append(ch, fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%q},"finish_reason":"length"}`, i, strings.Repeat("t ", tokens)))
			} else {
				ch = append(ch, fmt.Sprintf(`{"index":%d,"text":%q,"finish_reason":"length"}`, i, strings.Repeat("t ", tokens)))
			}
		}
		u := `,"usage":` + usage
		if fault == "no_usage" {
			u = ""
		}
		out := fmt.Sprintf(`{"id":"x","object":"chat.completion","model":%q,"choices":[%s]%s}`, q.Model, strings.Join(ch, ","), u)
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write([]byte(out))
			zw.Close()
			return
		}
		io.WriteString(w, out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(s string) {
		fmt.Fprintf(w, "data: %s\n\n", s)
		fl.Flush()
	}
	delta := func(i int, tok string, finish string) string {
		fr := "null"
		if finish != "" {
			fr = strconv.Quote(finish)
		}
		if chat {
			return fmt.Sprintf(`{"id":"x","object":"chat.completion.chunk","model":%q,"choices":[{"index":%d,"delta":{"content":%q},"finish_reason":%s}]}`, q.Model, i, tok, fr)
		}
		return fmt.Sprintf(`{"id":"x","object":"text_completion","model":%q,"choices":[{"index":%d,"text":%q,"finish_reason":%s}]}`, q.Model, i, tok, fr)
	}
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	if !sleep(ttft) {
		return
	}
	for t := range tokens {
		if t > 0 && !sleep(itl) {
			return
		}
		if fault == "die" && t == tokens/2 {
			panic(http.ErrAbortHandler) // the connection is cut mid-stream
		}
		if fault == "malformed" && t == 1 {
			fmt.Fprint(w, "data: {not json\n\n")
		}
		if fault == "error_event" && t == 1 {
			event(`{"error":{"message":"out of memory","type":"InternalServerError","code":500}}`)
		}
		for i := range n {
			event(delta(i, "t"+strconv.Itoa(t), ""))
		}
	}
	for i := range n {
		event(delta(i, "", "length"))
	}
	if q.StreamOptions != nil && q.StreamOptions.IncludeUsage && fault != "no_usage" {
		event(`{"id":"x","object":"chat.completion.chunk","model":"` + q.Model + `","choices":[],"usage":` + usage + `}`)
	}
	event("[DONE]")
}
