// Package layering holds the test that keeps leafproxy's imports running
// one way: each package may import only the packages docs/ARCHITECTURE.md
// lists for it. It has no code of its own.
package layering
