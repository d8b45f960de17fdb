// Package collector reads inference engines. One adapter file per engine
// (vllm.go, sglang.go, llamacpp.go) declares which of the engine's families
// feed which signal of the engine-neutral contract; parse.go turns a
// /metrics body into a snapshot.Snapshot with those tables; scrape.go
// fetches a body over HTTP with a timeout, a size cap and no redirects off
// the target's host. GPU backends live in collector/gpu.
package collector
