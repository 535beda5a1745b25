package service

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/leafproxy/leafproxy/admin"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/tablematch"
	"github.com/leafproxy/leafproxy/rewriter"
)

// What each table rule covers on the backend (issue 39): a pattern fills
// only the tables that have its column as their key (an integer column,
// alone the primary key or with AUTO_INCREMENT, without a default of its
// own; rewriter.TableKey.FillsPattern, the engine's test per statement)
// and leaves the others alone; an exact rule over a table without such a
// key is a configuration fault. Read at start, at each reload and by
// `leafproxy check`; shown in the log, on the status page and by check.

// RuleCoverage is what one rule of tables[] covers on the backend.
type RuleCoverage struct {
	Index   int    `json:"rule"`  // tables[Index]
	Table   string `json:"table"` // the rule's table, as configured
	Pattern bool   `json:"pattern"`
	// Filled: the tables the rule fills, db.table; Tags: the tag each is
	// filled from (per_table: its own).
	Filled []string `json:"filled"`
	Tags   []string `json:"tags"`
	// LeftAlone: the tables the pattern matches but leaves to the server.
	LeftAlone []LeftAlone `json:"left_alone,omitempty"`
	// Problem (an exact rule): why its table's key cannot be filled, "".
	Problem string `json:"problem,omitempty"`
}

// LeftAlone is a table a pattern matched and does not fill, and why.
type LeftAlone struct {
	Table string `json:"table"`
	Why   string `json:"why"`
}

// tableCols is one table's columns as read from information_schema.
type tableCols struct {
	db, table string
	cols      []colRow
	pri       int
}

type colRow struct {
	name, dataType, columnType, extra, key string
	scale                                  int64
	def                                    sql.NullString
}

// ruleCoverage reads, on conn, the tables the rules of cfg match and says
// what each rule does with them, with the rules as the backend's
// lower_case_table_names compares names.
func ruleCoverage(ctx context.Context, conn *sql.Conn, cfg *config.Config, lowerCaseTableNames int) ([]RuleCoverage, error) {
	rs, err := rewriter.NewRules(RewriterRules(cfg), rewriter.WithLowerCaseTableNames(lowerCaseTableNames))
	if err != nil {
		return nil, err
	}
	c := tablematch.CaseOf(lowerCaseTableNames)
	out := make([]RuleCoverage, 0, len(cfg.Tables))
	for i, r := range cfg.Tables {
		name, err := tablematch.Parse(r.Table, c)
		if err != nil {
			continue
		}
		tables, err := readTableCols(ctx, conn, name)
		if err != nil {
			return out, err
		}
		cov := RuleCoverage{Index: i, Table: r.Table, Pattern: name.IsPattern(), Filled: []string{}, Tags: []string{}}
		for _, t := range tables {
			full := t.db + "." + t.table
			rule, ok := rs.Lookup(t.db, t.table)
			if !ok || rule.Table != r.Table {
				if cov.Pattern && !ok {
					cov.LeftAlone = append(cov.LeftAlone, LeftAlone{full, "left out by exclude"})
				}
				continue // another rule's (an exact one, or an earlier pattern)
			}
			k := t.key(r.Column)
			if fill, why := k.FillsPattern(r.Column); !fill {
				if cov.Pattern {
					cov.LeftAlone = append(cov.LeftAlone, LeftAlone{full, why})
					continue
				}
				cov.Problem = fmt.Sprintf("%s cannot be filled by this rule: %s", full, why)
			}
			tag := r.Tag
			if rule.PerTable {
				tag = rewriter.PerTableTag(r.Tag, t.db, t.table, rs.FoldsCase())
			}
			cov.Filled, cov.Tags = append(cov.Filled, full), append(cov.Tags, tag)
		}
		out = append(out, cov)
	}
	return out, nil
}

// key is what the table says of column, as the engine reads it.
func (t *tableCols) key(column string) rewriter.TableKey {
	k := rewriter.TableKey{Known: true}
	for _, c := range t.cols {
		if !strings.EqualFold(c.name, column) {
			continue
		}
		k.Column, k.Type = true, c.columnType
		switch c.dataType {
		case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
			k.Integer = true
		case "decimal", "numeric":
			k.Integer = c.scale == 0
		}
		k.Key = c.key == "PRI" && t.pri == 1
		k.AutoIncrement = strings.Contains(strings.ToLower(c.extra), "auto_increment")
		if c.def.Valid && c.def.String != "NULL" {
			k.Default = c.def.String
		}
	}
	return k
}

// readTableCols reads the columns of every table name stands for.
func readTableCols(ctx context.Context, conn *sql.Conn, name tablematch.Name) ([]*tableCols, error) {
	q, args := name.FilterLike("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(NUMERIC_SCALE, 0), EXTRA, COLUMN_KEY, COLUMN_DEFAULT"+
		" FROM information_schema.COLUMNS WHERE TABLE_SCHEMA NOT IN ("+tablematch.SystemSchemas+")", nil)
	q += " ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION LIMIT 100000"
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the columns of the tables %s matches: %w", name.Text, err)
	}
	defer rows.Close()
	var out []*tableCols
	for rows.Next() {
		var db, table string
		var c colRow
		if err := rows.Scan(&db, &table, &c.name, &c.dataType, &c.columnType, &c.scale, &c.extra, &c.key, &c.def); err != nil {
			return nil, err
		}
		if !name.Match(db, table) {
			continue
		}
		if n := len(out); n == 0 || out[n-1].db != db || out[n-1].table != table {
			out = append(out, &tableCols{db: db, table: table})
		}
		t := out[len(out)-1]
		c.dataType = strings.ToLower(c.dataType)
		t.cols = append(t.cols, c)
		if c.key == "PRI" {
			t.pri++
		}
	}
	return out, rows.Err()
}

// coverageNotes are the log lines of what each pattern covers, and the
// warnings of exact rules whose table's key cannot be filled.
func coverageNotes(cov []RuleCoverage, backend string) (info, warn []ruleNote) {
	for _, c := range cov {
		attrs := []any{"rule", fmt.Sprintf("tables[%d]", c.Index), "table", c.Table, "backend", backend}
		if c.Problem != "" {
			warn = append(warn, ruleNote{fmt.Sprintf("table rule %q: %s; statements on it are refused or fail until the rule or the table is fixed", c.Table, c.Problem), attrs})
		}
		if !c.Pattern || len(c.Filled)+len(c.LeftAlone) == 0 {
			continue
		}
		left := make([]string, 0, len(c.LeftAlone))
		for _, l := range c.LeftAlone {
			left = append(left, l.Table+" ("+l.Why+")")
		}
		info = append(info, ruleNote{fmt.Sprintf("table rule %q fills %d table(s) and leaves %d alone", c.Table, len(c.Filled), len(c.LeftAlone)),
			append(attrs, "filled", strings.Join(c.Filled, ", "), "left_alone", strings.Join(left, "; "))})
	}
	return info, warn
}

// tableRows reads what the rules in force cover on the backend now, for
// SHOW LEAFPROXY TABLES (and keeps it for the status page).
func (s *Service) tableRows(ctx context.Context) ([]admin.TableRow, error) {
	cfg := s.live.Load()
	s.mu.Lock()
	lctn := s.lowerCaseTableNames
	s.mu.Unlock()
	if len(cfg.Tables) == 0 {
		return nil, nil
	}
	conn, err := s.health.backend.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cov, err := ruleCoverage(ctx, conn, cfg, lctn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.coverage = cov
	s.mu.Unlock()
	var rows []admin.TableRow
	for _, c := range cov {
		rule := fmt.Sprintf("tables[%d]", c.Index)
		for i, t := range c.Filled {
			rows = append(rows, admin.TableRow{Rule: rule, RuleTable: c.Table, Table: t, Action: "filled", Tag: c.Tags[i], Why: c.Problem})
		}
		for _, l := range c.LeftAlone {
			rows = append(rows, admin.TableRow{Rule: rule, RuleTable: c.Table, Table: l.Table, Action: "left alone", Why: l.Why})
		}
	}
	return rows, nil
}
