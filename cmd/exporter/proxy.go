package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/webserve"
	"github.com/goodput-exporter/goodput-exporter/proxy"
)

// proxyCmd runs the measuring proxy in front of one engine: a sidecar in
// the engine's pod, or any process on the path to it (docs/proxy.md).
type proxyCmd struct {
	Listen         string        `name:"listen" default:":8001" help:"Address clients reach the engine through."`
	Upstream       string        `name:"upstream" required:"" placeholder:"URL" help:"The engine's base URL, e.g. http://127.0.0.1:8000."`
	OTLPEndpoint   string        `name:"otlp-endpoint" placeholder:"URL" help:"The daemon's OTLP/HTTP traces URL (e.g. http://$(HOST_IP):4318/v1/traces); empty: requests are measured on /metrics only."`
	MetricsAddress string        `name:"web.listen-address" default:":9836" help:"Address of the proxy's own /metrics (not --listen, where /metrics is the engine's)."`
	WebConfigFile  string        `name:"web.config.file" placeholder:"FILE" help:"exporter-toolkit web configuration file for TLS and basic auth of the proxy's own /metrics."`
	Timeout        time.Duration `name:"upstream.timeout" default:"0s" help:"Longest a completion request may take from arrival to its last byte; past it the request is cut and counted as a timeout (0: no limit)."`
	HeaderTimeout  time.Duration `name:"upstream.header-timeout" default:"10m" help:"Longest wait for the engine's response headers (sent before the first token of a stream, with the whole answer otherwise); past it the client gets 504 and the request is a timeout."`
	MaxRequestBody string        `name:"max-request-body" default:"32MiB" placeholder:"SIZE" help:"Largest completion request body; it is read whole to find the model and stream flag, and a larger one is refused with 413. Other requests stream through unread."`
	MaxEventSize   string        `name:"max-event-size" default:"1MiB" placeholder:"SIZE" help:"Largest server-sent event held while it is parsed; a longer one is forwarded unparsed and the stream counted as malformed."`
	InjectUsage    bool          `name:"inject-usage" default:"true" negatable:"" help:"Ask streams for their usage (stream_options.include_usage) when the client did not, and strip that chunk from what the client receives; without it such streams have estimated tokens."`
	QueueSize      int           `name:"otlp.queue-size" default:"4096" help:"Most request spans waiting for the daemon; past it spans are dropped and counted, never slowing a client."`
	ServiceName    string        `name:"otlp.service-name" env:"OTEL_SERVICE_NAME" help:"service.name of the spans: the target whose traces.service_name it equals gets them."`
	Pod            string        `name:"otlp.pod" env:"POD_NAME" help:"k8s.pod.name of the spans (the engine's pod)."`
	Namespace      string        `name:"otlp.namespace" env:"POD_NAMESPACE" help:"k8s.namespace.name of the spans."`
}

func (c *proxyCmd) Validate() error {
	u, err := url.Parse(c.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--upstream %q: want http(s)://host:port", c.Upstream)
	}
	if c.OTLPEndpoint != "" {
		if u, err := url.Parse(c.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--otlp-endpoint %q: want http(s)://host:port/v1/traces", c.OTLPEndpoint)
		}
	}
	if c.Timeout < 0 || c.HeaderTimeout < 0 || c.QueueSize < 0 {
		return errors.New("--upstream.timeout, --upstream.header-timeout and --otlp.queue-size must not be negative")
	}
	for flag, v := range map[string]string{"--max-request-body": c.MaxRequestBody, "--max-event-size": c.MaxEventSize} {
		if n, err := config.ParseByteSize(v); err != nil || n <= 0 {
			return fmt.Errorf("%s %q: want a positive size such as 32MiB", flag, v)
		}
	}
	return nil
}

func (c *proxyCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(e.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	up, _ := url.Parse(c.Upstream)
	maxBody, _ := config.ParseByteSize(c.MaxRequestBody)
	maxEvent, _ := config.ParseByteSize(c.MaxEventSize)
	var exp *proxy.Exporter
	o := proxy.Options{Upstream: up, Timeout: c.Timeout, HeaderTimeout: c.HeaderTimeout,
		MaxRequestBody: int64(maxBody), MaxEvent: int64(maxEvent), InjectUsage: c.InjectUsage, Logger: e.logger}
	p, err := proxy.New(o)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	if c.OTLPEndpoint != "" {
		host, _ := os.Hostname()
		exp = proxy.NewExporter(proxy.ExporterOptions{Endpoint: c.OTLPEndpoint, QueueSize: c.QueueSize, Logger: e.logger,
			Resource: proxy.Resource{ServiceName: c.ServiceName, Pod: c.Pod, Namespace: c.Namespace, Host: host}}, p.Metrics)
		p.SetSink(exp.Enqueue)
		expCtx, cancel := context.WithCancel(context.Background())
		go exp.Run(expCtx)
		defer func() { cancel(); <-exp.Done() }()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(p.Metrics, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	front := &http.Server{Addr: c.Listen, Handler: p, ReadHeaderTimeout: 30 * time.Second}
	l, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	ml, err := webserve.ListenAll([]string{c.MetricsAddress})
	if err != nil {
		l.Close()
		return err
	}
	e.logger.Info("proxying", "listen", l.Addr().String(), "upstream", c.Upstream, "metrics", ml[0].Addr().String())
	g.Go(func() error {
		if err := front.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		return webserve.Serve(gctx, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ml, c.WebConfigFile, e.logger)
	})
	g.Go(func() error {
		<-gctx.Done()
		// Streams in flight are let finish, up to 30 s.
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		front.Shutdown(sctx)
		return nil
	})
	return g.Wait()
}
