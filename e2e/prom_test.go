package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// promAPI is the part of Prometheus' HTTP API the suite reads.
type promAPI struct{ base string }

// series is one series of a query's answer: its labels and values, and
// the values' times.
type series struct {
	Metric map[string]string
	Values []float64
	Times  []time.Time
}

func (s series) String() string {
	var ls []string
	for k, v := range s.Metric {
		ls = append(ls, k+"="+strconv.Quote(v))
	}
	sort.Strings(ls)
	vals := s.Values
	more := ""
	if len(vals) > 6 {
		more = fmt.Sprintf(" … (%d values)", len(vals))
		vals = vals[len(vals)-6:]
	}
	return fmt.Sprintf("{%s} %v%s", strings.Join(ls, ", "), vals, more)
}

func (p promAPI) get(path string, v url.Values) (json.RawMessage, error) {
	resp, err := http.Get(p.base + path + "?" + v.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status, Error string
		Data          json.RawMessage
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %v: %.300s", path, err, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", path, r.Error)
	}
	return r.Data, nil
}

// query evaluates an instant query now.
func (p promAPI) query(q string) ([]series, error) {
	data, err := p.get("/api/v1/query", url.Values{"query": {q}})
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	return decode(data)
}

// queryRange evaluates q over [start, end] every step, as a Grafana
// time-series panel does.
func (p promAPI) queryRange(q string, start, end time.Time, step time.Duration) ([]series, error) {
	data, err := p.get("/api/v1/query_range", url.Values{"query": {q},
		"start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
	if err != nil {
		return nil, fmt.Errorf("query_range %s: %w", q, err)
	}
	return decode(data)
}

func decode(data json.RawMessage) ([]series, error) {
	var r struct {
		ResultType string `json:"resultType"`
		Result     json.RawMessage
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	var raw []struct {
		Metric map[string]string
		Value  []any
		Values [][]any
	}
	switch r.ResultType {
	case "vector", "matrix":
		if err := json.Unmarshal(r.Result, &raw); err != nil {
			return nil, err
		}
	case "scalar":
		var v []any
		if err := json.Unmarshal(r.Result, &v); err != nil {
			return nil, err
		}
		raw = append(raw, struct {
			Metric map[string]string
			Value  []any
			Values [][]any
		}{Value: v})
	default:
		return nil, fmt.Errorf("result type %q", r.ResultType)
	}
	var out []series
	for _, s := range raw {
		x := series{Metric: s.Metric}
		if s.Value != nil {
			s.Values = append(s.Values, s.Value)
		}
		for _, v := range s.Values {
			f, _ := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
			x.Values = append(x.Values, f)
			ts, _ := v[0].(float64)
			x.Times = append(x.Times, time.Unix(0, int64(ts*1e9)))
		}
		out = append(out, x)
	}
	return out, nil
}

// show is a query and its answer, for failure messages.
func (p promAPI) show(q string) string {
	res, err := p.query(q)
	if err != nil {
		return fmt.Sprintf("  PromQL: %s\n    error: %v\n", q, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  PromQL: %s\n", q)
	if len(res) == 0 {
		b.WriteString("    (empty)\n")
	}
	for _, s := range res {
		fmt.Fprintf(&b, "    %s\n", s)
	}
	return b.String()
}

// notification is one alert of a webhook call from Alertmanager.
type notification struct {
	At          time.Time
	Status      string // firing or resolved
	Labels      map[string]string
	Annotations map[string]string
}

func (n notification) String() string {
	return fmt.Sprintf("%s %-8s %s target=%q instance=%q severity=%q mode=%q", n.At.Format("15:04:05.000"), n.Status,
		n.Labels["alertname"], n.Labels["target"], n.Labels["instance"], n.Labels["severity"], n.Labels["mode"])
}

// webhook is the receiver Alertmanager routes to: it records every alert
// of every call.
type webhook struct {
	mu  sync.Mutex
	log []notification
}

func (w *webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var msg struct {
		Alerts []struct {
			Status      string
			Labels      map[string]string
			Annotations map[string]string
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range msg.Alerts {
		w.log = append(w.log, notification{At: time.Now(), Status: a.Status, Labels: a.Labels, Annotations: a.Annotations})
	}
}

// find returns the notifications for which match is true.
func (w *webhook) find(match func(notification) bool) []notification {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []notification
	for _, n := range w.log {
		if match(n) {
			out = append(out, n)
		}
	}
	return out
}

// dump is the whole log, or that of one target, for failure messages.
func (w *webhook) dump(target string) string {
	ns := w.find(func(n notification) bool { return target == "" || n.Labels["target"] == target })
	var b strings.Builder
	fmt.Fprintf(&b, "  webhook log (%s): %d alerts\n", cmpOr(target, "all targets"), len(ns))
	for _, n := range ns {
		fmt.Fprintf(&b, "    %s\n", n)
	}
	return b.String()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
