//go:build tools

// Package thanos only names the command this module builds, so that
// `go mod tidy` keeps its dependencies.
package thanos

import _ "github.com/thanos-io/thanos/cmd/thanos"
