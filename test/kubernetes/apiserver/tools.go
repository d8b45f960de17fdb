//go:build tools

// Package apiserver only names the command this module builds, so that
// `go mod tidy` keeps its dependencies.
package apiserver

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
