// Command mixin-gen writes the monitoring mixin (rules, alerts,
// dashboards, runbooks, PrometheusRule) from mixin.Default().
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goodput-exporter/goodput-exporter/mixin"
)

func main() {
	root := flag.String("root", ".", "repository root to write into")
	flag.Parse()
	files, err := mixin.Default().Files()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mixin-gen:", err)
		os.Exit(1)
	}
	for _, p := range mixin.SortedPaths(files) {
		path := filepath.Join(*root, p)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "mixin-gen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, files[p], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mixin-gen:", err)
			os.Exit(1)
		}
	}
}
