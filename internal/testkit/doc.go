// Package testkit is the folder of leafproxy's test harnesses: packages
// that only tests import, kept apart from the production helpers beside
// it in internal/ (sqltext, killsql, edge, metric, raw, ...), so a reader
// of internal/ sees at once which packages ship in the binary.
//
//   - testdb: throwaway MariaDB servers (and a 3-node Galera cluster) on
//     loopback, started, stopped, killed, paused and forwarded by tests;
//     Skippable/Unavailable decide in one place whether a test without
//     MariaDB skips (-short) or fails.
//   - fakestore: an in-memory allocation store (leaf_alloc, the snowflake
//     layouts and worker-id spaces, the key reads) for the allocator's,
//     admin's and the generators' unit tests.
//   - testwait: the one way tests wait for a condition (polling with a
//     generous deadline, never a fixed sleep).
//   - leafproc: cmd/leafproxy built once and run in a child process, so a
//     test can bound the proxy's own resident memory.
//   - driversuite, ormsuite: go-sql-driver's, GORM's and Sequelize's own
//     test suites run directly and through a leafproxy (test files only;
//     scripts/driver-suite.sh, scripts/gorm-suite.sh,
//     scripts/sequelize-suite.sh).
//
// The rule: production code never imports testkit (no non-test file
// outside internal/testkit imports a package under it;
// internal/layering's TestTestkitOnlyInTests fails otherwise), and testkit
// may import anything (fakestore implements the allocator's store
// interfaces, so it imports allocator: an arrow that may run back up the
// house only because nothing of the product points at it). Package names
// are the harnesses' own (testdb, fakestore, ...), not testkit.
//
// This package itself has no code.
package testkit
