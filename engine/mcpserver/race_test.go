//go:build race

package mcpserver_test

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = true
