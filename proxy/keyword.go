package proxy

import (
	"bytes"

	"github.com/leafproxy/leafproxy/internal/sqltext"
)

// What a statement is (its first word, USE, SET sql_mode, KILL, whether
// more statements follow) is read once per command by
// internal/sqltext.Classify (classify); what is a comment, a quoted text
// or an executable comment is internal/sqltext's, shared with the engine
// and the rewriter.

// Class is the current COM_QUERY's or COM_STMT_PREPARE's class, read once
// by the proxy before the interceptor sees the text: its first words,
// whether more statements follow, whether it may hold a sequence call or
// DDL or be an admin statement (sqltext.Class). Valid during Query and
// Prepare.
func (s *Session) Class() sqltext.Class { return s.class }

// commandClass is the class of text, the command packet's own, for the
// whole command (until endClass): read now, or the one the event loop read
// for the same command before it handed it back (handBack.class), so a
// command is classified once wherever it runs.
func (c *commandState) commandClass(text []byte) sqltext.Class {
	if c.handedOK {
		c.handedOK = false
		c.class, c.classText = c.handed, text
	} else {
		c.beginClass(text)
	}
	c.received, c.receivedOK = c.class, true
	return c.class
}

// beginClass classifies text, the command's (or the text it was mapped
// to, proxy/kill/multi.go), for the rest of the command (until endClass).
func (c *commandState) beginClass(text []byte) sqltext.Class {
	c.class, c.classText = sqltext.Classify(text), text
	c.classified++
	return c.class
}

// endClass ends the command's class: its text's buffer is reused.
func (c *commandState) endClass() { c.classText = nil }

// classOf is text's class: the command's when text is the command's own
// text (an interceptor relaying it unchanged), else text's, read now.
func (c *commandState) classOf(text []byte) sqltext.Class {
	if c.classText != nil && bytes.Equal(text, c.classText) {
		return c.class
	}
	c.classified++
	return sqltext.Classify(text)
}

// skipSpace skips whitespace and comments (not /*! */ which MySQL
// executes).
func skipSpace(q []byte) []byte { return q[sqltext.SkipSpace(q, 0):] }
