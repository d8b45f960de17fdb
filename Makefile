# The README's two commands: `go run ./cmd/exporter demo` and `make test`.
GO      ?= go
PKG     := github.com/prometheus/common/version
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X $(PKG).Version=$(VERSION) \
           -X $(PKG).Revision=$(shell git rev-parse HEAD 2>/dev/null) \
           -X $(PKG).Branch=$(shell git rev-parse --abbrev-ref HEAD 2>/dev/null) \
           -X $(PKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

# NVIDIA's NVML bindings wrap every NVML call, the ones NVML 13 deprecates
# included: without this the first build prints about 30 C compiler
# warnings that look like a failure (the README says what they are). Go's
# own default (-O2 -g) is kept; a CGO_CFLAGS in the environment wins.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: all build test lint fmt-check vet bench figures demo fuzz chart-sync chart-test manifests image mixin accuracy test-kubernetes capacity-realtools capacity-realtools-guidellm test-fleet test-fleet-mutants

all: build test

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o goodput-exporter ./cmd/exporter

# test is what CI runs (.ci/run): formatting, vet, then every test with the
# race detector, then the failure-mode evaluation's CI share and the
# shapes' overload loads without it (see accuracy), then the Helm chart's tests (their own module, so that
# the Helm library stays out of the daemon's).
test: fmt-check vet
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run '^(TestFailModeEvaluation|TestShapeOverloads|TestQueueOnset|TestPastKnee)$$' ./accuracy/
	$(MAKE) chart-test

# accuracy runs the failure-mode classifier's whole evaluation (every
# lever on 50 evaluation seeds, every healthy shape, load and cadence on
# 10, every format) and rewrites accuracy/testdata/failmode-eval.txt and
# the tables of docs/accuracy.md from it; `make test` reruns its first
# seeds (without the race detector: long deterministic simulations) and
# fails when either is stale.
accuracy:
	$(GO) test -count=1 -timeout 180m -run '^TestFailModeEvaluation$$' ./accuracy/ -args -failmode.full -update

# capacity-realtools drives the real AIPerf (pinned, installed from PyPI in
# a virtual environment at TOOLSVENV) against a test engine with a real
# queue and judges the files it writes (capacity/realtools_test.go). The
# install is over a gigabyte and a run takes minutes: not part of test.
TOOLSVENV      ?= $(HOME)/.cache/goodput-capacity-tools
AIPERF_VERSION := 0.13.0
capacity-realtools:
	test -x $(TOOLSVENV)/bin/aiperf || { python3 -m venv $(TOOLSVENV) && $(TOOLSVENV)/bin/pip install aiperf==$(AIPERF_VERSION); }
	CAPACITY_TOOLS_VENV=$(TOOLSVENV) $(GO) test -count=1 -tags realtools -timeout 30m -run '^TestRealToolsAIPerf' -v ./capacity/

# capacity-realtools-guidellm does the same with GuideLLM, whose install
# pulls PyTorch (about 6 GB).
GUIDELLMVENV     ?= $(HOME)/.cache/goodput-capacity-guidellm
GUIDELLM_VERSION := 0.8.1
capacity-realtools-guidellm:
	test -x $(GUIDELLMVENV)/bin/guidellm || { python3 -m venv $(GUIDELLMVENV) && $(GUIDELLMVENV)/bin/pip install guidellm==$(GUIDELLM_VERSION); }
	CAPACITY_GUIDELLM_VENV=$(GUIDELLMVENV) $(GO) test -count=1 -tags realtools -timeout 30m -run '^TestRealToolsGuideLLM' -v ./capacity/

CHART     := deploy/helm/goodput-exporter
CHARTTEST := deploy/helm/chart_test

# chart-test renders the chart (default and other values), decodes every
# object strictly and checks it against the sources and the plain manifests.
chart-test:
	cd $(CHARTTEST) && $(GO) vet ./... && $(GO) test -count=1 ./...

# chart-sync copies the rules and dashboards into the chart (Helm reads
# only files inside the chart); chart-test fails when they differ.
chart-sync:
	rm -f $(CHART)/files/rules/*.yml $(CHART)/files/dashboards/*.json
	cp rules/*.yml $(CHART)/files/rules/
	cp dashboards/*.json $(CHART)/files/dashboards/

# test-kubernetes installs the chart into a real kube-apiserver on a real
# etcd and runs the daemon against it (TestRealAPIServer, docs/kubernetes.md);
# not part of test: it needs Debian's etcd-server and a kube-apiserver,
# built once from the k8s.io/kubernetes module (test/kubernetes/apiserver,
# its version matching the client-go in go.mod) into KUBE_CACHE, several
# minutes the first time (docs/kubernetes.md has the figures).
KUBE_CACHE     ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/goodput-exporter
KUBE_VERSION   := $(shell sed -n 's/^require k8s.io\/kubernetes //p' test/kubernetes/apiserver/go.mod)
KUBE_APISERVER ?= $(KUBE_CACHE)/kube-apiserver-$(KUBE_VERSION)

test-kubernetes: $(KUBE_APISERVER)
	@command -v etcd >/dev/null 2>&1 || { echo "test-kubernetes needs etcd: apt-get install etcd-server"; exit 1; }
	cd $(CHARTTEST) && GOODPUT_KUBE_APISERVER=$(KUBE_APISERVER) $(GO) test -count=1 -timeout 20m -v -run '^TestRealAPIServer$$' .

$(KUBE_APISERVER):
	mkdir -p $(dir $@)
	cd test/kubernetes/apiserver && nice $(GO) build -trimpath -o $@.tmp \
		-ldflags "-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) -X k8s.io/component-base/version.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/kube-apiserver
	mv $@.tmp $@

# test-fleet runs the mixin on Thanos (e2e/fleet_test.go, docs/e2e.md):
# two clusters, one an HA pair of Prometheus, a Sidecar per Prometheus,
# Query deduplicating, Ruler with the global groups, Alertmanager. Not
# part of test: it needs Thanos, built once from the module proxy
# (test/thanos, v0.42.3 with Thanos' own replace lines and build tags)
# into THANOS_CACHE, several minutes the first time.
THANOS_VERSION := $(shell sed -n 's/^require github.com\/thanos-io\/thanos //p' test/thanos/go.mod)
THANOS         ?= $(KUBE_CACHE)/thanos-$(THANOS_VERSION)
FLEET_TEST     := $(GO) test -count=1 -timeout 15m -v -run '^TestFleetOnThanos$$' ./e2e/

test-fleet: $(THANOS)
	GOODPUT_THANOS=$(THANOS) $(FLEET_TEST)

# test-fleet-mutants shows that each assertion of test-fleet can fail:
# each mutant (a rule and a panel dropping the cluster label, the HA pair
# without deduplication, the global groups in the per-cluster files) must
# fail the suite with the message of the assertion it breaks.
FLEET_MUTANTS := cluster:a.series.of.no.one.cluster:a.cluster_.rule.one dedup:keeps.the.replica.label global:a.global_.rule.has.no.cluster
test-fleet-mutants: $(THANOS)
	@set -e; for m in $(FLEET_MUTANTS); do \
		name=$${m%%:*}; \
		if GOODPUT_THANOS=$(THANOS) GOODPUT_FLEET_MUTANT=$$name $(FLEET_TEST) > fleet-mutant-$$name.out 2>&1; then \
			echo "mutant $$name passed test-fleet (fleet-mutant-$$name.out)"; exit 1; fi; \
		for w in $$(echo $${m#*:} | tr : ' '); do \
			want=$$(echo $$w | tr . ' '); \
			grep -q "$$want" fleet-mutant-$$name.out || { echo "mutant $$name failed, but not with \"$$want\" (fleet-mutant-$$name.out)"; exit 1; }; \
			echo "mutant $$name: failed with \"$$want\""; \
		done; \
	done

$(THANOS):
	mkdir -p $(dir $@)
	cd test/thanos && nice $(GO) build -trimpath -tags netgo,slicelabels -o $@.tmp \
		-ldflags "-X github.com/prometheus/common/version.Version=$(patsubst v%,%,$(THANOS_VERSION))" \
		github.com/thanos-io/thanos/cmd/thanos
	mv $@.tmp $@

# manifests rewrites deploy/kubernetes/ from the chart's defaults.
manifests: chart-sync
	cd $(CHARTTEST) && $(GO) test -count=1 -run TestPlainManifests . -update

IMAGE ?= ghcr.io/goodput-exporter/goodput-exporter

# image builds the container the chart runs (values.yaml image.repository).
image:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) .

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# fuzz runs each fuzz target for FUZZTIME, a count (CI: 20000x, about 10 s each) or a time
# (a time can fail spuriously on Go 1.26: go.dev/issue/75804). A crasher is
# written under the package's testdata/fuzz and then runs with every test.
FUZZTIME ?= 100000x
FUZZ_TARGETS := ./collector/:FuzzParse ./config/:FuzzParse ./collector/gpu/:FuzzParseDCGMExporter ./goodput/:FuzzTrackerSequence ./exporter/exposition/:FuzzCachedText
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name $$pkg ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

# figures measures every figure of docs/benchmarks.md's "Cited figures"
# again (parse benchmarks against expfmt and PromParser, render against
# parse, the measuring proxy, the whole daemon's CPU time and memory from
# /proc, and make test from an empty build cache) and rewrites the table
# with the commit, date and machine; about twenty minutes. Commit
# first: a figure names the commit it was measured at, and
# internal/docscheck fails when what it measures changed after it.
figures:
	nice $(GO) run ./test/figures

# bench runs every benchmark (docs/benchmarks.md describes them).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=6 ./collector/ ./exporter/ ./goodput/ ./sim/ ./collector/gpu/ ./diagnosis/ | tee bench.out

demo:
	$(GO) run ./cmd/exporter demo

# mixin regenerates the rules, alerts, dashboards, runbooks and the
# PrometheusRule from mixin/ (the mixin test fails when they are stale).
mixin:
	$(GO) generate ./mixin
