// Command goodput-exporter scrapes LLM inference engines on a node and
// serves goodput, KV-cache pressure and failure-mode series for Prometheus.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "goodput-exporter:", err)
		}
		os.Exit(exitStatus(err))
	}
}
