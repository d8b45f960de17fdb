# The README's two commands: `go run ./cmd/exporter demo` and `make test`.
GO      ?= go
PKG     := github.com/prometheus/common/version
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X $(PKG).Version=$(VERSION) \
           -X $(PKG).Revision=$(shell git rev-parse HEAD 2>/dev/null) \
           -X $(PKG).Branch=$(shell git rev-parse --abbrev-ref HEAD 2>/dev/null) \
           -X $(PKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

.PHONY: all build test lint fmt-check vet bench demo fuzz

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

# fuzz runs each fuzz target for FUZZTIME, a count (CI: 20000x, about 10 s each) or a time
# (a time can fail spuriously on Go 1.26: go.dev/issue/75804). A crasher is
# written under the package's testdata/fuzz and then runs with every test.
FUZZTIME ?= 100000x
FUZZ_TARGETS := ./collector/:FuzzParse ./config/:FuzzParse ./collector/gpu/:FuzzParseDCGMExporter ./goodput/:FuzzTrackerSequence
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name $$pkg ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

# bench reproduces docs/benchmarks.md.
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=6 ./collector/ ./exporter/ ./goodput/ ./sim/ ./collector/gpu/ ./diagnosis/ | tee bench.out

demo:
	$(GO) run ./cmd/exporter demo
