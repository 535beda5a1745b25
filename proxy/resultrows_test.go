package proxy

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// rowsInterceptor answers `SELECT 'typed'` with WriteRows and executes of
// the prepared `SELECT 'typed', ?` with WriteBinaryRows.
type rowsInterceptor struct {
	BaseInterceptor
}

var typedCols = []wire.Column{
	{Name: "big", Type: wire.TypeBigint},
	{Name: "flag", Type: wire.TypeInt},
	{Name: "name", Type: wire.TypeVarchar},
	{Name: "at", Type: wire.TypeDatetime3},
}

var typedAt = time.Date(2026, 3, 4, 5, 6, 7, 89_000_000, time.UTC)

var typedRows = [][]wire.Value{
	{wire.IntValue(-9_000_000_000_000_000_000), wire.IntValue(1), wire.StringValue("tag `x` é"), wire.TimeValue(typedAt)},
	{wire.NullValue, wire.NullValue, wire.NullValue, wire.NullValue},
	{wire.IntValue(0), wire.IntValue(0), wire.StringValue(""), wire.TimeValue(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))},
}

func (rowsInterceptor) Query(_ context.Context, s *Session, sql []byte) (bool, error) {
	switch string(sql) {
	case "SELECT 'typed'":
		return true, s.WriteRows(typedCols, typedRows)
	case "SELECT 'mistyped'":
		return true, s.WriteRows(typedCols[:1], [][]wire.Value{{wire.StringValue("x")}})
	}
	return false, nil
}

func (rowsInterceptor) Prepare(_ context.Context, s *Session, sql []byte) (bool, error) {
	if string(sql) != "SELECT 'typed', ?" {
		return false, nil
	}
	pr, err := s.blocking().RelayPrepare([]byte("SELECT CAST(0*? AS SIGNED) AS big, (NULL = 1) AS flag, CAST('' AS CHAR(128) CHARACTER SET utf8mb4) AS name, CAST(NULL AS DATETIME(3)) AS at"))
	if err == nil && pr.OK {
		s.SetValue(pr.StmtID)
	}
	return true, err
}

func (rowsInterceptor) Execute(_ context.Context, s *Session, id uint32, _ []byte) (bool, error) {
	if prepared, ok := s.Value().(uint32); !ok || prepared != id {
		return false, nil
	}
	return true, s.WriteBinaryRows(typedCols, typedRows)
}

// TestWriteRows: typed result sets the proxy writes itself reach
// go-sql-driver with their MySQL types (BIGINT, INT, VARCHAR, DATETIME(3)
// with 3 decimals), values and NULLs, in the text protocol and in the
// binary one, with and without parseTime; a value of the wrong type is
// refused before anything is written and the session goes on.
func TestWriteRows(t *testing.T) {
	ensureDB(t, sharedDB(t), "typedrows")
	e := startProxy(t, sharedDB(t).Addr, nil, WithInterceptor(rowsInterceptor{}))
	for _, params := range []string{"", "parseTime=true"} {
		db := e.open(t, "typedrows", params)
		ctx := context.Background()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read := func(name string, rows *sql.Rows, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			defer rows.Close()
			types, err := rows.ColumnTypes()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ct := range types {
				_, scale, _ := ct.DecimalSize()
				got = append(got, ct.Name()+" "+ct.DatabaseTypeName()+" "+string(rune('0'+scale)))
			}
			if want := "big BIGINT 0|flag INT 0|name VARCHAR 0|at DATETIME 3"; strings.Join(got, "|") != want {
				t.Errorf("%s (%s): columns %q, want %q", name, params, strings.Join(got, "|"), want)
			}
			var out []string
			for rows.Next() {
				var big, flag sql.NullInt64
				var str sql.NullString
				var at any
				if err := rows.Scan(&big, &flag, &str, &at); err != nil {
					t.Fatalf("%s: scan: %v", name, err)
				}
				ts := "NULL"
				switch v := at.(type) {
				case []byte:
					ts = string(v)
				case time.Time:
					ts = v.UTC().Format("2006-01-02 15:04:05.000")
				case nil:
				default:
					t.Fatalf("%s: DATETIME scanned as %T", name, at)
				}
				f := func(n sql.NullInt64) string {
					if !n.Valid {
						return "NULL"
					}
					return strconv.FormatInt(n.Int64, 10)
				}
				s := "NULL"
				if str.Valid {
					s = "'" + str.String + "'"
				}
				out = append(out, f(big)+","+f(flag)+","+s+","+ts)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := "-9000000000000000000,1,'tag `x` é',2026-03-04 05:06:07.089;NULL,NULL,NULL,NULL;0,0,'',2020-01-01 00:00:00.000"
			if strings.Join(out, ";") != want {
				t.Errorf("%s (%s): rows\n%s\nwant\n%s", name, params, strings.Join(out, ";"), want)
			}
		}
		rows, err := conn.QueryContext(ctx, "SELECT 'typed'")
		read("text", rows, err)
		st, err := conn.PrepareContext(ctx, "SELECT 'typed', ?")
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			rows, err = st.QueryContext(ctx, 5)
			read("binary", rows, err)
		}
		st.Close()
		if _, err := conn.QueryContext(ctx, "SELECT 'mistyped'"); err == nil || !strings.Contains(err.Error(), "a string value") {
			t.Errorf("mistyped value: %v", err)
		}
		var one int
		if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("session after a refused result: %d %v", one, err)
		}
		conn.Close()
	}
}
