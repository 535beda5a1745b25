package admin

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// SHOW LEAFPROXY SEQUENCES LIKE 'pattern' and SHOW LEAFPROXY SEQUENCES
// WHERE expr, as SHOW ... LIKE / WHERE work in MariaDB: LIKE matches the
// tag column, WHERE any expression over the columns. Both are evaluated by
// the backend, on the session's own connection, so they mean exactly what
// they mean in MariaDB (collation, wildcards, ESCAPE, operators,
// functions): the rows are sent as a derived table of literals and the
// backend answers which of them match.

// showFilter reads SHOW LEAFPROXY SEQUENCES {LIKE pattern | WHERE expr}:
// the filter as a WHERE expression over the columns (ok false: not this
// statement). The pattern and the expression are SQL text the backend
// parses; an admin running them could run them anyway.
func showFilter(s string) (filter string, ok bool) {
	pos := 0
	var words [4]string
	for n := range words {
		pos = sqltext.SkipSpace(s, pos)
		j := pos
		for j < len(s) && sqltext.IsIdentByte(s[j]) {
			j++
		}
		words[n], pos = s[pos:j], j
	}
	if !strings.EqualFold(words[0], "SHOW") || !strings.EqualFold(words[1], "LEAFPROXY") || !strings.EqualFold(words[2], "SEQUENCES") {
		return "", false
	}
	rest := strings.TrimSpace(s[pos:])
	rest = strings.TrimSpace(strings.TrimSuffix(rest, ";"))
	if rest == "" {
		return "", false
	}
	switch {
	case strings.EqualFold(words[3], "LIKE"):
		return "`tag` LIKE " + rest, true
	case strings.EqualFold(words[3], "WHERE"):
		return rest, true
	}
	return "", false
}

// textColumns are SHOW LEAFPROXY SEQUENCES' columns that hold text; the
// others hold numbers (or NULL), sent to the backend as numbers so that
// WHERE ids_left < 1000 compares numbers.
var textColumns = map[string]bool{"tag": true, "generator": true, "last_error": true, "lease_expires": true,
	"layout": true, "exhausted_at": true, "limited_by": true, "description": true}

// filterRows keeps the rows for which filter holds, as the backend
// evaluates it over cols.
func filterRows(ctx context.Context, s session, cols []string, rows [][]*string, filter string) ([][]*string, error) {
	if len(rows) == 0 {
		return rows, nil
	}
	var b strings.Builder
	b.WriteString("SELECT `__leafproxy_row` FROM (")
	for i, row := range rows {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT %d", i)
		if i == 0 {
			b.WriteString(" AS `__leafproxy_row`")
		}
		for c, v := range row {
			b.WriteString(", ")
			literal(&b, v, textColumns[cols[c]])
			if i == 0 {
				b.WriteString(" AS `" + cols[c] + "`")
			}
		}
	}
	b.WriteString(") AS `__leafproxy_sequences` WHERE (")
	b.WriteString(filter)
	b.WriteString(") ORDER BY 1")
	got, err := s.BackendQuery(ctx, b.String())
	if err != nil {
		return nil, err
	}
	out := make([][]*string, 0, len(got))
	for _, r := range got {
		if len(r) != 1 || r[0] == nil {
			return nil, fmt.Errorf("leafproxy: SHOW LEAFPROXY SEQUENCES: the filter did not select rows")
		}
		i, err := strconv.Atoi(*r[0])
		if err != nil || i < 0 || i >= len(rows) {
			return nil, fmt.Errorf("leafproxy: SHOW LEAFPROXY SEQUENCES: the filter did not select rows (got %q)", *r[0])
		}
		out = append(out, rows[i])
	}
	return out, nil
}

// literal writes v as SQL: NULL, a number, or a utf8mb4 string as a hex
// literal (no quoting or escaping that a session's sql_mode could change).
func literal(b *strings.Builder, v *string, text bool) {
	switch {
	case v == nil:
		b.WriteString("NULL")
	case !text && isDecimal(*v):
		b.WriteString(*v)
	case *v == "":
		b.WriteString("_utf8mb4''")
	default:
		b.WriteString("_utf8mb4 X'")
		b.WriteString(hex.EncodeToString([]byte(*v)))
		b.WriteString("'")
	}
}

// isDecimal says v is a plain decimal number (digits, one optional sign
// and point).
func isDecimal(v string) bool {
	v = strings.TrimPrefix(v, "-")
	whole, frac, _ := strings.Cut(v, ".")
	return whole != "" && strings.Trim(whole, "0123456789") == "" && strings.Trim(frac, "0123456789") == ""
}
