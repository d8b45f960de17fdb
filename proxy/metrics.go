package proxy

import "github.com/prometheus/client_golang/prometheus"

// Phases of the added latency histogram.
const (
	PhaseRequest = "request" // arrival to the request being handed to the upstream (reading and parsing its body)
	PhaseChunk   = "chunk"   // a chunk read from the upstream to its flush to the client
)

// Metrics are the proxy's own series, served on its /metrics.
type Metrics struct {
	requests, upstreamErrors, spansDropped *prometheus.CounterVec
	passthrough, estimated, spansSent      prometheus.Counter
	requestBytes, responseBytes            prometheus.Counter
	active                                 prometheus.Gauge
	queued                                 prometheus.GaugeFunc
	added                                  *prometheus.HistogramVec
	addedRequest, addedChunk               prometheus.Observer
	queueLen                               func() int
}

// Reasons a span is dropped, the reason label of
// goodput_exporter_proxy_spans_dropped_total.
const (
	DropQueueFull = "queue_full"   // the export queue was full (the daemon slow or down)
	DropExport    = "export_error" // the export request failed or was refused as a whole
	DropRejected  = "rejected"     // the daemon took the export but refused the span (partial success)
)

// DropReasons lists every drop reason.
var DropReasons = []string{DropQueueFull, DropExport, DropRejected}

// NewMetrics returns the proxy's series, every label value initialised.
func NewMetrics() *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_proxy_requests_total",
			Help: "Completion requests measured by the proxy, by outcome: ok, upstream_error (reason in goodput_exporter_proxy_upstream_errors_total), timeout, client_abort (the client hung up first; the upstream request was cancelled), rejected (a 4xx other than 408 and 429, or a body over --max-request-body: sent as no span)."}, []string{"outcome"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_proxy_upstream_errors_total",
			Help: "Measured requests the upstream failed, by reason: status (HTTP 5xx, 408, 429), refused, reset (the connection closed before or during the response), malformed_stream, error_event."}, []string{"reason"}),
		spansDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_proxy_spans_dropped_total",
			Help: "Request spans that did not reach the daemon, by reason: queue_full (--otlp.queue-size spans waiting), export_error (the export failed or was refused whole), rejected (refused by the daemon: see its goodput_exporter_otlp_spans_total)."}, []string{"reason"}),
		passthrough: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodput_exporter_proxy_passthrough_requests_total",
			Help: "Requests forwarded without being measured (anything but POST /v1/completions and /v1/chat/completions)."}),
		estimated: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodput_exporter_proxy_estimated_tokens_requests_total",
			Help: "Measured requests whose completion tokens are an estimate (no usage in the response: counted content-bearing chunks), sent with goodput_exporter.usage.estimated=true."}),
		spansSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodput_exporter_proxy_spans_sent_total",
			Help: "Request spans the daemon's OTLP receiver accepted."}),
		requestBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodput_exporter_proxy_request_bytes_total",
			Help: "Bytes of measured request bodies received from clients."}),
		responseBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "goodput_exporter_proxy_response_bytes_total",
			Help: "Bytes of measured response bodies read from the upstream."}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "goodput_exporter_proxy_active_requests",
			Help: "Measured requests in progress now (streams open, or answers awaited)."}),
		added: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "goodput_exporter_proxy_added_latency_seconds",
			Help:    "Latency the proxy adds, by phase: request (arrival to the request being sent upstream: reading and parsing its body), chunk (a streamed chunk read from the upstream to its flush to the client).",
			Buckets: []float64{10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 0.1}}, []string{"phase"}),
	}
	for _, o := range Outcomes {
		m.requests.WithLabelValues(o)
	}
	for _, r := range UpstreamReasons {
		m.upstreamErrors.WithLabelValues(r)
	}
	for _, r := range DropReasons {
		m.spansDropped.WithLabelValues(r)
	}
	m.addedRequest = m.added.WithLabelValues(PhaseRequest)
	m.addedChunk = m.added.WithLabelValues(PhaseChunk)
	m.queued = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "goodput_exporter_proxy_spans_queued",
		Help: "Request spans waiting to be sent to the daemon now (at most --otlp.queue-size)."}, func() float64 {
		if m.queueLen == nil {
			return 0
		}
		return float64(m.queueLen())
	})
	return m
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.upstreamErrors, m.spansDropped, m.passthrough, m.estimated,
		m.spansSent, m.requestBytes, m.responseBytes, m.active, m.queued, m.added}
}
