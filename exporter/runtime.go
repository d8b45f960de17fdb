package exporter

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// slowGatherer gathers at most once per period and serves the cached
// families in between. The process collector reads /proc (stat, limits,
// every open file descriptor) on each gather, which cost more than all the
// engine series together when renders came four times per interval; the Go
// and process metrics need not be fresher than the collection interval.
type slowGatherer struct {
	g      prometheus.Gatherer
	period time.Duration

	mu   sync.Mutex
	last time.Time
	mfs  []*dto.MetricFamily
	err  error
}

func (s *slowGatherer) Gather() ([]*dto.MetricFamily, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mfs == nil || time.Since(s.last) >= s.period {
		s.mfs, s.err = s.g.Gather()
		s.last = time.Now()
	}
	return s.mfs, s.err
}
