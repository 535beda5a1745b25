// Package integration holds end-to-end tests: real MariaDB servers started by
// the tests (internal/testkit/testdb), the proxy run in-process (or, where a test
// bounds the proxy's memory, the binary in a child process:
// internal/testkit/leafproc), real clients (go-sql-driver/mysql, the mariadb CLI).
package integration

import (
	"testing"

	"github.com/leafproxy/leafproxy/internal/testkit/leafproc"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m, leafproc.Cleanup) }
