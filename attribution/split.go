package attribution

// split divides one GPU among the targets that hold it: alone, it is all
// theirs; shared, each gets its part of the generation tokens the holders
// produced in the interval, or an equal part when none produced any (an
// idle shared GPU is still somebody's cost).
func split(m Method, names []string, targets map[string]*Target) []Share {
	if len(names) == 0 {
		return nil
	}
	shares := make([]Share, len(names))
	if len(names) == 1 {
		shares[0] = Share{Target: names[0], Method: m, Split: SplitNone, Fraction: 1}
		return shares
	}
	var total float64
	for _, n := range names {
		total += tokens(targets[n])
	}
	for i, n := range names {
		if total > 0 {
			shares[i] = Share{Target: n, Method: m, Split: SplitTokens, Fraction: tokens(targets[n]) / total}
		} else {
			shares[i] = Share{Target: n, Method: m, Split: SplitEqual, Fraction: 1 / float64(len(names))}
		}
	}
	return shares
}

// tokens is a target's positive token count; a counter reset or an
// unknown count gives it no weight rather than a negative one.
func tokens(t *Target) float64 {
	if t == nil || !(t.Tokens > 0) {
		return 0
	}
	return t.Tokens
}
