package rewriter

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// Mode is the part of a session's sql_mode that changes how statement text
// is read or how keys are filled.
type Mode struct {
	// ANSIQuotes makes "x" an identifier instead of a string.
	ANSIQuotes bool
	// NoBackslashEscapes makes \ an ordinary character inside strings.
	NoBackslashEscapes bool
	// NoAutoValueOnZero keeps an explicit 0 in a key column instead of
	// filling it.
	NoAutoValueOnZero bool
	// Strict (STRICT_TRANS_TABLES or STRICT_ALL_TABLES): a key value that
	// does not convert cleanly to an integer is an error, not a warning and
	// a 0 (which AUTO_INCREMENT would generate a key for).
	Strict bool
	// PipesAsConcat, IgnoreSpace and HighNotPrecedence only change how the
	// parser reads expressions; they are passed on so it reads them as the
	// server does.
	PipesAsConcat     bool
	IgnoreSpace       bool
	HighNotPrecedence bool
}

// ParseSQLMode reads the value of @@sql_mode (a comma-separated list, any
// case). Unknown names are ignored: they cannot change how text is lexed.
// Combination modes that include ANSI_QUOTES (ANSI and the MariaDB
// ORACLE, MSSQL, DB2, POSTGRESQL and MAXDB sets) set it too, because a
// client may send the short name before the server expands it.
func ParseSQLMode(sqlMode string) Mode {
	var m Mode
	for sqlMode != "" {
		var name string
		name, sqlMode, _ = strings.Cut(sqlMode, ",")
		name = strings.TrimSpace(name)
		switch {
		case strings.EqualFold(name, "ANSI_QUOTES"):
			m.ANSIQuotes = true
		case strings.EqualFold(name, "NO_BACKSLASH_ESCAPES"):
			m.NoBackslashEscapes = true
		case strings.EqualFold(name, "NO_AUTO_VALUE_ON_ZERO"):
			m.NoAutoValueOnZero = true
		case strings.EqualFold(name, "STRICT_TRANS_TABLES"), strings.EqualFold(name, "STRICT_ALL_TABLES"),
			strings.EqualFold(name, "TRADITIONAL"):
			m.Strict = true
		case strings.EqualFold(name, "PIPES_AS_CONCAT"):
			m.PipesAsConcat = true
		case strings.EqualFold(name, "IGNORE_SPACE"):
			m.IgnoreSpace = true
		case strings.EqualFold(name, "HIGH_NOT_PRECEDENCE"):
			m.HighNotPrecedence = true
		case strings.EqualFold(name, "ANSI"), strings.EqualFold(name, "ORACLE"),
			strings.EqualFold(name, "MSSQL"), strings.EqualFold(name, "DB2"),
			strings.EqualFold(name, "POSTGRESQL"), strings.EqualFold(name, "MAXDB"):
			m.ANSIQuotes, m.PipesAsConcat, m.IgnoreSpace = true, true, true
		}
	}
	return m
}

// parserMode is the parser's view of m.
func (m Mode) parserMode() mysql.SQLMode {
	var s mysql.SQLMode
	if m.ANSIQuotes {
		s |= mysql.ModeANSIQuotes
	}
	if m.NoBackslashEscapes {
		s |= mysql.ModeNoBackslashEscapes
	}
	if m.PipesAsConcat {
		s |= mysql.ModePipesAsConcat
	}
	if m.IgnoreSpace {
		s |= mysql.ModeIgnoreSpace
	}
	if m.HighNotPrecedence {
		s |= mysql.ModeHighNotPrecedence
	}
	return s
}
