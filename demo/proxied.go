package demo

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/goodput-exporter/goodput-exporter/proxy"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// maxPlaying bounds the simulated requests played through the proxy at
// once; a record past it is not played (its engine's histograms still
// count it).
const maxPlaying = 2048

// proxied is an engine that sends no request spans, put behind the
// measuring proxy: its finished requests are played back over an
// OpenAI-compatible stream (sim.Replay) by clients that go through the
// proxy, and the proxy sends the daemon a span for each, as it does in
// front of a real SGLang server.
type proxied struct {
	engine   *Engine
	APIURL   string // the engine's OpenAI-compatible API (the playback)
	ProxyURL string // the measuring proxy in front of it
	replay   *sim.Replay
	model    string
}

// startProxy serves the engine's playback API and a measuring proxy in
// front of it on loopback, sending spans to otlpURL; clock is the
// simulation's (speed times the wall clock), so that the proxy measures
// simulated seconds as the engine's own histograms do.
func startProxy(ctx context.Context, en *Engine, otlpURL string, speed float64, clock func() time.Time, logger *slog.Logger) (*proxied, error) {
	var model string
	en.srv.Do(func(e *sim.Engine) { model = e.Config().Model.Name })
	pr := &proxied{engine: en, model: model, replay: &sim.Replay{Speed: speed, Coalesce: 25 * time.Millisecond, Model: model}}
	serve := func(h http.Handler) (string, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(l)
		go func() {
			<-ctx.Done()
			srv.Close()
		}()
		return "http://" + l.Addr().String(), nil
	}
	var err error
	if pr.APIURL, err = serve(pr.replay); err != nil {
		return nil, err
	}
	up, _ := url.Parse(pr.APIURL)
	p, err := proxy.New(proxy.Options{Upstream: up, InjectUsage: true, Now: clock, Logger: logger})
	if err != nil {
		return nil, err
	}
	exp := proxy.NewExporter(proxy.ExporterOptions{Endpoint: otlpURL, Resource: proxy.Resource{ServiceName: en.Name}, Logger: logger}, p.Metrics)
	p.SetSink(exp.Enqueue)
	go exp.Run(ctx)
	if pr.ProxyURL, err = serve(p); err != nil {
		return nil, err
	}
	return pr, nil
}

// play sends, every interval, the requests the engine finished since the
// last time through the proxy, each at its own pace.
func (pr *proxied) play(ctx context.Context, speed float64, every time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxPlaying}}
	slots := make(chan struct{}, maxPlaying)
	var last time.Duration
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var recs []sim.Record
		pr.engine.srv.Do(func(e *sim.Engine) {
			now := e.Now()
			recs = e.Truth().Records(last, now)
			last = now
		})
		for _, r := range recs {
			select {
			case slots <- struct{}{}:
			default:
				continue
			}
			if !pr.replay.Add(r) {
				<-slots
				continue
			}
			go func() {
				defer func() { <-slots }()
				sim.Play(ctx, client, pr.ProxyURL, r, pr.model, speed)
			}()
		}
	}
}

func (pr *proxied) String() string {
	return fmt.Sprintf("%s → %s", pr.ProxyURL, pr.APIURL)
}
