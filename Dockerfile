# Builder: cgo on, because the NVML and DCGM backends dlopen their libraries
# at run time (nothing NVIDIA is linked or copied here).
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# -Wno-deprecated-declarations: the NVML bindings wrap the calls NVML 13
# deprecates too (the README's note on the build's warnings).
RUN CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=${VERSION}" \
      -o /out/goodput-exporter ./cmd/exporter

# Runtime: glibc (for dlopen of libnvidia-ml / libdcgm, which the NVIDIA
# container toolkit mounts in), no shell, non-root.
FROM gcr.io/distroless/base-debian12:nonroot
COPY --from=build /out/goodput-exporter /usr/bin/goodput-exporter
USER 65532:65532
EXPOSE 9835
ENTRYPOINT ["/usr/bin/goodput-exporter"]
