# The README's two commands: `go run ./cmd/exporter demo` and `make test`.
GO      ?= go
PKG     := github.com/prometheus/common/version
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X $(PKG).Version=$(VERSION) \
           -X $(PKG).Revision=$(shell git rev-parse HEAD 2>/dev/null) \
           -X $(PKG).Branch=$(shell git rev-parse --abbrev-ref HEAD 2>/dev/null) \
           -X $(PKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

.PHONY: all build test lint fmt-check vet bench demo mixin

all: build test

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o goodput-exporter ./cmd/exporter

# test is what CI runs (.ci/run): formatting, vet, then every test with the
# race detector.
test: fmt-check vet
	$(GO) test -race -count=1 ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# bench reproduces docs/benchmarks.md.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=6 ./collector/ ./exporter/ ./goodput/ ./sim/ ./collector/gpu/ | tee bench.out

demo:
	$(GO) run ./cmd/exporter demo

# mixin regenerates the rules, alerts, dashboards, runbooks and the
# PrometheusRule from mixin/ (the mixin test fails when they are stale).
mixin:
	$(GO) generate ./mixin
