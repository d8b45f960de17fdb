//go:build race

package accuracy

const raceEnabled = true
