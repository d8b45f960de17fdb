package main

import (
	"errors"
	"fmt"

	"github.com/goodput-exporter/goodput-exporter/config"
)

type checkConfigCmd struct {
	File string `arg:"" name:"file" help:"Configuration file to check."`
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
	fmt.Fprintf(e.stdout, "%s: ok (%d targets)\n", c.File, len(cfg.Targets))
	return nil
}
