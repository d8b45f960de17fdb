package main

import "github.com/prometheus/common/version"

func init() {
	// Release builds set these with -ldflags (see the Makefile); a plain
	// `go run` or `go build` still says what it is.
	if version.Version == "" {
		version.Version = "dev"
	}
}
