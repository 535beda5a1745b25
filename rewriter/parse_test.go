package rewriter

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
)

// mustParse parses sql with the TiDB parser under mode.
func mustParse(t testing.TB, sql string, mode Mode) error {
	t.Helper()
	p := parser.New()
	p.SetSQLMode(mode.parserMode())
	_, _, err := p.ParseSQL(sql)
	return err
}
