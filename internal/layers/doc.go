// Package layers holds the module's layering and the test that keeps it:
// every package has a layer, and every import points down a layer.
package layers
