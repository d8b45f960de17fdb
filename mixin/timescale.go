package mixin

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// rangeSelector matches a range selector's duration: [5m], [1h30m], [30d].
var rangeSelector = regexp.MustCompile(`\[((?:[0-9]+(?:ms|[smhdwy]))+)\]`)

// scaled applies TimeScale to groups (see Config.TimeScale).
func (c Config) scaled(groups []Group) []Group {
	if c.TimeScale <= 1 {
		return groups
	}
	out := make([]Group, len(groups))
	for i, g := range groups {
		g.Interval = c.scaleDuration(g.Interval)
		rules := make([]Rule, len(g.Rules))
		for j, r := range g.Rules {
			r.For = c.scaleDuration(r.For)
			r.Expr = rangeSelector.ReplaceAllStringFunc(r.Expr, func(m string) string {
				return "[" + c.scaleDuration(m[1:len(m)-1]) + "]"
			})
			rules[j] = r
		}
		g.Rules = rules
		out[i] = g
	}
	return out
}

// scaleDuration divides a Prometheus duration by TimeScale, to the
// millisecond; "" stays "".
func (c Config) scaleDuration(s string) string {
	if s == "" {
		return s
	}
	d := time.Duration(float64(parsePromDuration(s)) / c.TimeScale).Round(time.Millisecond)
	if d < time.Millisecond {
		d = time.Millisecond
	}
	if d%time.Second != 0 {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return promDuration(d)
}

// parsePromDuration reads any Prometheus duration: units y, w, d, h, m,
// s, ms, combined from the largest (1d12h, 1h30m).
func parsePromDuration(s string) time.Duration {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"ms", time.Millisecond}, {"y", 365 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour},
		{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			panic(fmt.Sprintf("mixin: bad duration %q", s))
		}
		var n int64
		fmt.Sscanf(rest[:i], "%d", &n)
		rest = rest[i:]
		matched := false
		for _, u := range units {
			if strings.HasPrefix(rest, u.suffix) {
				total += time.Duration(n) * u.d
				rest = rest[len(u.suffix):]
				matched = true
				break
			}
		}
		if !matched {
			panic(fmt.Sprintf("mixin: bad duration %q", s))
		}
	}
	return total
}
