package integration

import (
	"context"
	"database/sql/driver"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// Item 8: in a multi-statement text each statement's OK carries its own
// insert id: an INSERT whose rows all give their keys reports its last
// key (100, then 101), as MariaDB does for an AUTO_INCREMENT column,
// beside statements that generate keys and others; LAST_INSERT_ID() is
// left alone by the explicit ones.
func TestTwinMultiStatementExplicitInsertID(t *testing.T) {
	direct, proxied := twinEnv(t, "BIGINT")
	ctx := context.Background()
	multi := func(s *twinSide, q string) string {
		t.Helper()
		var out string
		err := s.conn.Raw(func(dc any) error {
			res, err := dc.(driver.ExecerContext).ExecContext(ctx, s.text(q), nil)
			if err != nil {
				code, _ := myErr(err)
				out = fmt.Sprintf("error %d", code)
				return nil
			}
			mr := res.(mysql.Result)
			for i, id := range mr.AllLastInsertIds() {
				rel := "0"
				if id != 0 {
					rel = fmt.Sprintf("F%+d", id-s.first)
				}
				out += fmt.Sprintf(" [%d] affected %d id %s", i, mr.AllRowsAffected()[i], rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var last int64
		if err := s.conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
			t.Fatal(err)
		}
		return out + fmt.Sprintf("; LAST_INSERT_ID() F%+d", last-s.first)
	}
	for _, q := range []string{
		"INSERT INTO {T} (id, b) VALUES ({F+100}, 'a'); INSERT INTO {T} (id, b) VALUES ({F+101}, 'b')",
		"INSERT INTO {T} (id, b) VALUES ({F+103}, 'c'), ({F+102}, 'd'); UPDATE {T} SET b = 'u' WHERE id = {F+100}; INSERT INTO {T} (id, b) VALUES ({F+110}, 'e')",
		"INSERT INTO {T} (b) VALUES ('g1'); INSERT INTO {T} (id, b) VALUES ({F+200}, 'f'); DO 1",
		"INSERT IGNORE INTO {T} (id, b) VALUES ({F+200}, 'dup'); INSERT INTO {T} (id, b) VALUES ({F+201}, 'h')",
	} {
		want, got := multi(direct, q), multi(proxied, q)
		if got != want {
			t.Fatalf("%s:\n direct:%s\n  proxy:%s", q, want, got)
		}
	}
}
