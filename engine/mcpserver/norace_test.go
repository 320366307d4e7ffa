//go:build !race

package mcpserver_test

const raceEnabled = false
