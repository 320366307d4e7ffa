//go:build race

package importer_test

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = true
