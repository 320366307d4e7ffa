//go:build race

package openapi

const raceEnabled = true
