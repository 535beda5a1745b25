package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Running one step on one side and observing everything a client can see
// of it (differential test, issue 28).

// diffObs is what one side saw of one step.
type diffObs struct {
	err      string   // "" or "<code>: <message>" (table names normalised)
	affected []int64  // per statement of the text
	insertID []int64  // the OK packets' insert ids, per statement
	returned []string // the rows of INSERT ... RETURNING
	warnings []string
	lastID   string // SELECT LAST_INSERT_ID()
	rows     []string
	dupKeys  []string
}

// diffSide is one session: direct to the twin or through the proxy.
type diffSide struct {
	name  string
	conn  *sql.Conn
	admin *sql.DB // root, straight to the backend
	table string
}

var diffTableName = regexp.MustCompile("\\b(app\\.)?[ar]_[0-9]+\\b|`(app`\\.`)?[ar]_[0-9]+`")

func (s *diffSide) norm(m string) string { return diffTableName.ReplaceAllString(m, "T") }

func (s *diffSide) errText(err error) string {
	if me, ok := err.(*mysql.MySQLError); ok {
		return fmt.Sprintf("%d: %s", me.Number, s.norm(me.Message))
	}
	return "client: " + err.Error()
}

// exec runs q (prepared when prep) on the raw driver connection, so that
// every statement's affected rows and insert id are seen (mysql.Result).
func (s *diffSide) exec(ctx context.Context, st diffStep) (aff, ids []int64, returned []string, err error) {
	q := strings.ReplaceAll(st.sql, "{T}", s.table)
	if st.around {
		// Written straight to the backend by another session, around the
		// proxy (a bulk import): only its success is observed.
		_, err := s.admin.ExecContext(ctx, q)
		return []int64{}, []int64{}, nil, err
	}
	err = s.conn.Raw(func(dc any) error {
		var res driver.Result
		var rows driver.Rows
		var err error
		returning := strings.Contains(q, " RETURNING ")
		nv := make([]driver.NamedValue, len(st.args))
		for i, a := range st.args {
			nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		switch {
		case !st.prep && returning:
			rows, err = dc.(driver.QueryerContext).QueryContext(ctx, q, nil)
		case !st.prep:
			res, err = dc.(driver.ExecerContext).ExecContext(ctx, q, nil)
		default:
			var ps driver.Stmt
			ps, err = dc.(driver.ConnPrepareContext).PrepareContext(ctx, q)
			if err != nil {
				return err
			}
			defer ps.Close()
			if returning {
				rows, err = ps.(driver.StmtQueryContext).QueryContext(ctx, nv)
			} else {
				res, err = ps.(driver.StmtExecContext).ExecContext(ctx, nv)
			}
		}
		if err != nil {
			return err
		}
		if rows != nil {
			defer rows.Close()
			vals := make([]driver.Value, len(rows.Columns()))
			for {
				if err := rows.Next(vals); err == io.EOF {
					break
				} else if err != nil {
					return err
				}
				returned = append(returned, fmt.Sprintf("%s", vals))
			}
			return nil
		}
		if mr, ok := res.(mysql.Result); ok {
			aff, ids = mr.AllRowsAffected(), mr.AllLastInsertIds()
		}
		return nil
	})
	return aff, ids, returned, err
}

// observe runs st and reads the session's warnings, LAST_INSERT_ID() and
// the table (in the same session: a transaction's own rows count).
func (s *diffSide) observe(ctx context.Context, st diffStep) (diffObs, error) {
	var o diffObs
	aff, ids, ret, err := s.exec(ctx, st)
	if err != nil {
		o.err = s.errText(err)
	}
	o.affected, o.insertID, o.returned = aff, ids, ret
	rows, err := s.conn.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return o, fmt.Errorf("%s: SHOW WARNINGS: %w", s.name, err)
	}
	for rows.Next() {
		var level, code, msg string
		if err := rows.Scan(&level, &code, &msg); err != nil {
			rows.Close()
			return o, err
		}
		o.warnings = append(o.warnings, level+" "+code+" "+s.norm(msg))
	}
	rows.Close()
	var last sql.NullString
	if err := s.conn.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&last); err != nil {
		return o, fmt.Errorf("%s: LAST_INSERT_ID(): %w", s.name, err)
	}
	o.lastID = last.String
	rows, err = s.conn.QueryContext(ctx, "SELECT id, u, v, w FROM "+s.table+" ORDER BY id")
	if err != nil {
		return o, fmt.Errorf("%s: read table: %w", s.name, err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var id, u, v, w sql.NullString
		if err := rows.Scan(&id, &u, &v, &w); err != nil {
			return o, err
		}
		if seen[id.String] {
			o.dupKeys = append(o.dupKeys, id.String)
		}
		seen[id.String] = true
		o.rows = append(o.rows, fmt.Sprintf("(%s,%s,%s,%s)", nstr(id), nstr(u), nstr(v), nstr(w)))
	}
	return o, rows.Err()
}

func nstr(s sql.NullString) string {
	if !s.Valid {
		return "NULL"
	}
	return s.String
}

// diffFields lists what differs between the two observations.
func diffFields(d, p diffObs) []string {
	var f []string
	if errCode(d.err) != errCode(p.err) {
		f = append(f, "error")
	} else if d.err != p.err {
		f = append(f, "error-message")
	}
	if fmt.Sprint(d.affected) != fmt.Sprint(p.affected) {
		f = append(f, "affected")
	}
	if fmt.Sprint(d.returned) != fmt.Sprint(p.returned) {
		f = append(f, "returning")
	}
	if fmt.Sprint(d.insertID) != fmt.Sprint(p.insertID) {
		f = append(f, "insert-id")
	}
	if strings.Join(d.warnings, "\n") != strings.Join(p.warnings, "\n") {
		f = append(f, "warnings")
	}
	if d.lastID != p.lastID {
		f = append(f, "last-insert-id")
	}
	if strings.Join(d.rows, " ") != strings.Join(p.rows, " ") {
		f = append(f, "rows")
	}
	if len(p.dupKeys) > 0 || len(d.dupKeys) > 0 {
		f = append(f, "duplicate-keys")
	}
	return f
}

func errCode(e string) string {
	if i := strings.IndexByte(e, ':'); i >= 0 {
		return e[:i]
	}
	return e
}

func (o diffObs) String() string {
	e := o.err
	if e == "" {
		e = "ok"
	}
	if o.returned != nil {
		e += fmt.Sprintf(" returning=%s", o.returned)
	}
	return fmt.Sprintf("result=%s affected=%v insert_id=%v warnings=%q LAST_INSERT_ID()=%s\n      rows=%s",
		e, o.affected, o.insertID, o.warnings, o.lastID, strings.Join(o.rows, " "))
}
