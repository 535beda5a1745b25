// Package layering holds the tests that keep leafproxy's structure: its
// imports run one way (each package may import only the packages
// docs/ARCHITECTURE.md lists for it), and every function of its production
// packages fits a room (cyclomatic complexity under 30, under 120 lines:
// rooms_test.go). It has no code of its own.
package layering
