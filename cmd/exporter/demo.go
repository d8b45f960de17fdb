package main

import (
	"time"

	"github.com/goodput-exporter/goodput-exporter/demo"
)

// demoCmd runs simulated engines, their GPUs and the daemon in one
// process, and shows the daemon's view in the terminal.
type demoCmd struct {
	ListenAddress string        `name:"web.listen-address" default:"127.0.0.1:9835" help:"Where the daemon serves /metrics."`
	EnginesListen string        `name:"engines.listen-address" default:"127.0.0.1:0" help:"Address of the first simulated engine; the others and the GPU endpoint take the following ports (port 0: any free ports)."`
	Speed         float64       `name:"speed" default:"10" help:"Simulated seconds per wall-clock second."`
	Seed          uint64        `name:"seed" default:"1" help:"Random seed of the simulation."`
	Tour          string        `name:"tour" default:"${tour}" help:"Lever script engine 0 follows (simulated time), inline or @FILE; engine 1 stays healthy."`
	Interval      time.Duration `name:"collect.interval" default:"1s" help:"How often the daemon scrapes the engines."`
	Refresh       time.Duration `name:"refresh" default:"1s" help:"How often the view is redrawn."`
	Duration      time.Duration `name:"duration" help:"Stop after this long (default: until Ctrl-C)."`
}

func (d *demoCmd) options() demo.Options {
	return demo.Options{ListenAddress: d.ListenAddress, EnginesListen: d.EnginesListen, Speed: d.Speed, Seed: d.Seed,
		Tour: d.Tour, Interval: d.Interval, Refresh: d.Refresh, Duration: d.Duration}
}

func (d *demoCmd) Validate() error {
	o := d.options()
	return o.Validate()
}

func (d *demoCmd) Run(e *env) error { return demo.Run(e.ctx, d.options(), e.stdout) }
