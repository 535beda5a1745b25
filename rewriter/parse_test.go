package rewriter

import (
	"testing"

	"github.com/pingcap/tidb/pkg/parser"
)

// tryParse parses sql with the TiDB parser under mode.
func tryParse(sql string, mode Mode) error {
	p := parser.New()
	p.SetSQLMode(mode.parserMode())
	_, _, err := p.ParseSQL(sql)
	return err
}

// mustParse fails the test when sql does not parse under mode.
func mustParse(t testing.TB, sql string, mode Mode) {
	t.Helper()
	if err := tryParse(sql, mode); err != nil {
		t.Errorf("output does not parse: %q: %v", sql, err)
	}
}
