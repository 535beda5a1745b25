//go:build !race

package rewriter

const raceEnabled = false
