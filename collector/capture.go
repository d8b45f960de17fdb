package collector

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Capturer reads captures of one engine, files of /metrics bodies or
// URLs scraped, with one parser, so that a URL taken twice is compared as
// the daemon compares two scrapes (slo-report's window between two
// captures).
type Capturer struct {
	// Engine is the engine's format; "" detects it from the first body.
	Engine snapshot.Engine
	Parse  ParseOptions
	// Target names the snapshots.
	Target string
	// MaxBody caps a scraped body.
	MaxBody int64

	parser  *Parser
	scraper *Scraper
}

// Take reads src: a URL (http:// or https://) is scraped, anything else
// is read as a file.
func (c *Capturer) Take(ctx context.Context, src string) (*snapshot.Snapshot, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		if c.scraper == nil {
			sc, err := NewScraper(ScraperConfig{Name: c.Target, URL: src, Engine: c.Engine,
				Timeout: 30 * time.Second, MaxBody: c.MaxBody, Parse: c.Parse})
			if err != nil {
				return nil, err
			}
			c.scraper = sc
		}
		snap, _, err := c.scraper.Scrape(ctx)
		return snap, err
	}
	body, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	if c.parser == nil {
		engine := c.Engine
		if engine == "" {
			var ok bool
			if engine, ok = Detect(body); !ok {
				return nil, errors.New("no metrics of an engine the daemon knows; pass --engine")
			}
		}
		if c.parser, err = NewParser(engine, c.Parse); err != nil {
			return nil, err
		}
	}
	snap, err := c.parser.Parse(body, "", time.Now())
	if err != nil {
		return nil, err
	}
	snap.Target = c.Target
	return snap, nil
}
