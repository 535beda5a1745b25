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

// sqlModeSets are the sql_mode names that change a Mode, and what each
// sets. Combination modes that include ANSI_QUOTES (ANSI and the MariaDB
// ORACLE, MSSQL, DB2, POSTGRESQL and MAXDB sets) set it too, because a
// client may send the short name before the server expands it.
var sqlModeSets = []struct {
	names []string
	set   func(*Mode)
}{
	{[]string{"ANSI_QUOTES"}, func(m *Mode) { m.ANSIQuotes = true }},
	{[]string{"NO_BACKSLASH_ESCAPES"}, func(m *Mode) { m.NoBackslashEscapes = true }},
	{[]string{"NO_AUTO_VALUE_ON_ZERO"}, func(m *Mode) { m.NoAutoValueOnZero = true }},
	{[]string{"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "TRADITIONAL"}, func(m *Mode) { m.Strict = true }},
	{[]string{"PIPES_AS_CONCAT"}, func(m *Mode) { m.PipesAsConcat = true }},
	{[]string{"IGNORE_SPACE"}, func(m *Mode) { m.IgnoreSpace = true }},
	{[]string{"HIGH_NOT_PRECEDENCE"}, func(m *Mode) { m.HighNotPrecedence = true }},
	{[]string{"ANSI", "ORACLE", "MSSQL", "DB2", "POSTGRESQL", "MAXDB"},
		func(m *Mode) { m.ANSIQuotes, m.PipesAsConcat, m.IgnoreSpace = true, true, true }},
}

// ParseSQLMode reads the value of @@sql_mode (a comma-separated list, any
// case), as sqlModeSets says. Unknown names are ignored: they cannot change
// how text is lexed.
func ParseSQLMode(sqlMode string) Mode {
	var m Mode
	for sqlMode != "" {
		var name string
		name, sqlMode, _ = strings.Cut(sqlMode, ",")
		name = strings.TrimSpace(name)
		for _, ms := range sqlModeSets {
			for _, n := range ms.names {
				if strings.EqualFold(name, n) {
					ms.set(&m)
				}
			}
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
