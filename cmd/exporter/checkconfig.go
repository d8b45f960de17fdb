package main

import (
	"errors"
	"fmt"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/exporter"
)

type checkConfigCmd struct {
	File       string `arg:"" name:"file" help:"Configuration file to check."`
	MaxTargets int    `name:"collect.max-targets" default:"${max_targets}" help:"The cap serve runs with (0: no cap): a file naming more targets is refused by both."`
}

// Run prints every problem on its own line, prefixed with the file name,
// and fails when there is any.
func (c *checkConfigCmd) Run(e *env) error {
	cfg, err := config.Load(c.File)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, ce := range errs {
				fmt.Fprintf(e.stdout, "%s: %s\n", c.File, ce)
			}
		} else {
			fmt.Fprintf(e.stdout, "%s: %v\n", c.File, err)
		}
		return errReported
	}
	// The limits serve applies past the file's own checks, by the same
	// function.
	if err := exporter.CheckLimits(cfg, c.MaxTargets); err != nil {
		fmt.Fprintf(e.stdout, "%s: %v\n", c.File, err)
		return errReported
	}
	fmt.Fprintf(e.stdout, "%s: ok (%d targets)\n", c.File, len(cfg.Targets))
	return nil
}
