//go:build race

package api_test

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = true
