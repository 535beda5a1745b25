package service

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/tablematch"
	"github.com/leafproxy/leafproxy/rewriter"
)

// Table rules compare database and table names as the backend does: its
// lower_case_table_names, a server global, is read once at start (and
// again at each reload), never per client session. At the same time the
// rules are checked against the tables the backend has, and what looks
// wrong is logged (start-up goes on: tables may be created later).

// ruleCheckTimeout bounds reading the backend's tables for the warnings.
const ruleCheckTimeout = 10 * time.Second

// backendNames is what the backend said about table names.
type backendNames struct {
	lowerCaseTableNames int   // lower_case_table_names
	err                 error // why it could not be read (lowerCaseTableNames is then a default)
	notes               []ruleNote
	infos               []ruleNote     // what each pattern fills and leaves alone
	coverage            []RuleCoverage // what each rule covers (nil: not read)
}

// ruleNote is one warning about a rule.
type ruleNote struct {
	msg   string
	attrs []any
}

func (b backendNames) rules(cfg *config.Config) (*rewriter.Rules, error) {
	return rewriter.NewRules(RewriterRules(cfg), rewriter.WithLowerCaseTableNames(b.lowerCaseTableNames))
}

// log writes what was found: how names are compared, and the notes.
func (b backendNames) log(log *slog.Logger, cfg *config.Config) {
	if len(cfg.Tables) == 0 {
		return
	}
	c := tablematch.CaseOf(b.lowerCaseTableNames)
	if b.err != nil {
		log.Warn(fmt.Sprintf("could not read the backend's lower_case_table_names: table rules compare names %s, as a Linux server does by default (lower_case_table_names=%d), until a reload (SIGHUP) reads it", c, b.lowerCaseTableNames),
			"backend", cfg.Backend.Addr, "err", b.err)
	} else {
		log.Info("table rules compare names as the backend does", "lower_case_table_names", b.lowerCaseTableNames, "names", c.String(), "backend", cfg.Backend.Addr)
	}
	for _, n := range b.infos {
		log.Info(n.msg, n.attrs...)
	}
	for _, n := range b.notes {
		log.Warn(n.msg, n.attrs...)
	}
}

// readBackendNames reads the backend's lower_case_table_names (fallback
// when it cannot) and checks cfg's rules against its tables, on one
// connection of db.
func readBackendNames(ctx context.Context, db *sql.DB, cfg *config.Config, fallback int) backendNames {
	b := backendNames{lowerCaseTableNames: fallback}
	if len(cfg.Tables) == 0 {
		return b
	}
	ctx, cancel := context.WithTimeout(ctx, ruleCheckTimeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		b.err = err
		return b
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&n); err != nil {
		b.err = err
		return b
	}
	b.lowerCaseTableNames = n
	notes, err := checkRuleTables(ctx, conn, cfg, n)
	if err != nil {
		notes = append(notes, ruleNote{"could not check the table rules against the backend's tables", []any{"backend", cfg.Backend.Addr, "err", err}})
	}
	cov, err := ruleCoverage(ctx, conn, cfg, n)
	if err != nil {
		notes = append(notes, ruleNote{"could not read which tables the table rules fill", []any{"backend", cfg.Backend.Addr, "err", err}})
	}
	infos, warns := coverageNotes(cov, cfg.Backend.Addr)
	b.notes, b.infos, b.coverage = append(notes, warns...), infos, cov
	return b
}

// ReadRuleCoverage reads what each table rule of cfg covers on its
// backend (for leafproxy check), with the backend's account.
func ReadRuleCoverage(ctx context.Context, cfg *config.Config) ([]RuleCoverage, error) {
	if len(cfg.Tables) == 0 {
		return nil, nil
	}
	h, err := newHealth(cfg, nil)
	if err != nil {
		return nil, err
	}
	defer h.close()
	b := readBackendNames(ctx, h.backend, cfg, 0)
	if b.err != nil {
		return nil, b.err
	}
	return b.coverage, nil
}

// checkRuleTables finds rules that stand for no table the backend has: a
// pattern that matches none (a typo, or tables not created yet), and an
// exact name whose table exists only in another case, on a backend that
// tells the two apart (the rule does not fill it).
func checkRuleTables(ctx context.Context, conn *sql.Conn, cfg *config.Config, lowerCaseTableNames int) ([]ruleNote, error) {
	c := tablematch.CaseOf(lowerCaseTableNames)
	var notes []ruleNote
	for i, r := range cfg.Tables {
		name, err := tablematch.Parse(r.Table, c)
		if err != nil {
			continue // config validation refuses it first
		}
		folded, _ := tablematch.Parse(r.Table, tablematch.Fold)
		matched, other, err := findTables(ctx, conn, name, folded)
		if err != nil {
			return notes, err
		}
		attrs := []any{"rule", fmt.Sprintf("tables[%d]", i), "table", r.Table, "backend", cfg.Backend.Addr}
		switch {
		case matched:
		case other != "" && c == tablematch.Exact:
			notes = append(notes, ruleNote{fmt.Sprintf("table rule %q matches no table on the backend, but %s differs from it only in case: "+
				"with lower_case_table_names=0 the backend treats them as different tables and the rule does not fill %s; write the name as the backend has it",
				r.Table, other, other), attrs})
		case name.IsPattern():
			notes = append(notes, ruleNote{fmt.Sprintf("table rule %q is a pattern that matches no table on the backend: nothing is filled by it until such a table exists; "+
				"check it (names are %s on this backend, lower_case_table_names=%d; patterns: %s)", r.Table, c, lowerCaseTableNames, tablematch.Syntax), attrs})
		}
	}
	return notes, nil
}

// findTables reports whether the backend has a table name stands for, and
// else one that folded (the same name, case ignored) stands for.
func findTables(ctx context.Context, conn *sql.Conn, name, folded tablematch.Name) (matched bool, other string, err error) {
	// information_schema's LIKE ignores case in MariaDB: the rows hold
	// both (MySQL 8 compares them as lower_case_table_names says).
	q, args := name.FilterLike("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN ("+tablematch.SystemSchemas+")", nil)
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return false, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var db, table string
		if err := rows.Scan(&db, &table); err != nil {
			return false, "", err
		}
		if name.Match(db, table) {
			return true, "", nil
		}
		if other == "" && folded.Match(db, table) {
			other = db + "." + table
		}
	}
	return false, other, rows.Err()
}
