// Package proxy is a measuring reverse proxy for OpenAI-compatible
// inference servers. It sits in front of one engine (a sidecar in the
// engine's pod, or any process on the path), forwards every request and
// streams every response back unchanged, chunk by chunk, and for each
// completion request (/v1/completions, /v1/chat/completions, streaming or
// not) measures from its own clock what the client saw: arrival, the first
// content-bearing chunk (time to first token), the last byte (end to end),
// the completion tokens (from the response's usage, else an estimate that
// is labelled one), the model and the outcome (ok, an upstream error, a
// timeout, or a client that hung up first).
//
// Each measured request leaves the proxy as one OTLP span with the
// attribute names of vLLM's llm_request span, sent in batches to the
// daemon's OTLP receiver, which judges it as it judges vLLM's own spans:
// the same bound="exact" series for every engine. Nothing is kept per
// request once its span is queued; the queue is bounded and a span that
// does not fit, or that the daemon does not take, is dropped and counted,
// so the daemon being down never slows or fails a client's request.
package proxy
