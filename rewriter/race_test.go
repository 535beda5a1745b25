//go:build race

package rewriter

// raceEnabled: the race detector instruments allocations, so the tests
// that bound the bytes a plan allocates check them only without it.
const raceEnabled = true
