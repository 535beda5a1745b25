package raw

import "unsafe"

// String returns a string that shares b's memory: no copy. The caller
// must not change b while the string (or anything sliced from it) is in
// use; whatever outlives b's next change must be copied first
// (strings.Clone).
func String(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// SameMemory reports whether a and b start at the same address and have
// the same length: whether one is a view of the other rather than a copy.
func SameMemory(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}
