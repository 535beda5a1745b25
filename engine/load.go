package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/leafproxy/leafproxy/internal/errstyle"
	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
	"github.com/leafproxy/leafproxy/rewriter/loadfile"
)

// load runs a LOAD DATA LOCAL INFILE into a rule table (docs/loaddata.md):
// the rendered statement reads one more first field per record, and the
// client's file passes through a loadfile.Transformer that writes the keys
// there, drawn in batches as the records go by. Before it, one query reads
// the file's character set and clears the statement's LAST_INSERT_ID()
// flag (rewriter.LoadPrelude). The whole load waits on the backend and the
// client's file, so it runs on the session's goroutine.
func (e *Engine) load(ctx context.Context, s Session, st *state, plan *rewriter.Plan, text string) (bool, error) {
	bs, err := s.Blocking(ctx)
	if err != nil {
		return false, err
	}
	ld := plan.Load
	if err := e.checkKeys(ctx, s, &st.lastColumns, plan.Filled); err != nil {
		return false, err
	}
	limits, err := e.keyLimits(ctx, s, &st.lastColumns, plan.Filled, nil)
	if err != nil {
		return false, err
	}
	f := ld.Format
	cs, err := loadPrelude(ctx, bs, ld.Charset)
	if err != nil {
		return false, err
	}
	kind, ok := loadfile.CharsetOf(cs)
	if !ok {
		return false, &notSupportedError{msg: fmt.Sprintf("leafproxy: LOAD DATA into %s.%s, whose key column %s the proxy fills: the file's character set %s "+
			"has multi-byte characters the proxy does not follow (some hide bytes that end fields or lines); "+
			"give CHARACTER SET utf8mb4, utf8mb3 or a single-byte character set such as latin1 or binary",
			ld.Filled.DB, ld.Filled.Table, ld.Filled.Column, cs)}
	}
	f.Charset = kind
	te := st.ownTag(ld.Filled.Tag)
	feed := &keyFeed{ctx: ctx, engine: e, session: st, entry: te, tag: te.name, table: ld.Filled.DB + "." + ld.Filled.Table, limits: limits}
	// The first key before the statement: a tag at its column's end is
	// answered as AUTO_INCREMENT answers, before anything is sent (LOCAL
	// implies IGNORE: OK with warning 167; REPLACE: error 167).
	if err := feed.draw(1); err != nil {
		if w := signalWarning(err); w != "" && !loadReplace(text, !st.env.Mode.NoBackslashEscapes) {
			return true, s.RelayQuery([]byte(w))
		}
		return false, err
	}
	st.rendered = ld.Render(st.rendered[:0], text)
	st.countStmt(StmtLoadData)
	affected, ok, err := bs.RelayQueryInfile(st.rendered, loadfile.New(f, feed))
	st.trim()
	if err == nil && ok && affected == 0 {
		// Nothing written: LAST_INSERT_ID() as it was (rewriter.LoadRestore).
		if _, _, err = bs.BackendExec(ctx, rewriter.LoadRestore); err != nil {
			err = fmt.Errorf("LOAD DATA wrote no row: put back LAST_INSERT_ID(): %w", err)
		}
	}
	return true, err
}

// loadPrelude runs rewriter.LoadPrelude and returns the character set the
// server reads the file in: the statement's CHARACTER SET (given), else
// the session's character_set_database; utf8 as the server resolves it
// (utf8mb3, or utf8mb4 under MariaDB's old_mode without UTF8_IS_UTF8MB3).
func loadPrelude(ctx context.Context, s proxy.BlockingSession, given string) (string, error) {
	rows, err := s.BackendQuery(ctx, "SELECT @@character_set_database, CHARSET(CONVERT('' USING utf8)), "+rewriter.LoadPrelude)
	if err != nil {
		return "", fmt.Errorf("prepare LOAD DATA (read character_set_database): %w", err)
	}
	if len(rows) != 1 || len(rows[0]) != 4 || rows[0][0] == nil || rows[0][1] == nil {
		return "", fmt.Errorf("prepare LOAD DATA (read character_set_database): unexpected answer")
	}
	cs, utf8 := strings.ToLower(*rows[0][0]), strings.ToLower(*rows[0][1])
	if given != "" {
		cs = given
	}
	if cs == "utf8" {
		cs = utf8
		if cs == "utf8" { // MariaDB before 10.6 calls utf8mb3 utf8
			cs = "utf8mb3"
		}
	}
	return cs, nil
}

// keyFeed hands a load's transformer its keys, drawn from the tag in
// batches that double with the file (1, 1, 2, 4, ... up to 4096): a small
// load skips few IDs, a large one draws rarely.
type keyFeed struct {
	ctx     context.Context
	engine  *Engine
	session *state
	entry   *tagEntry // tag's entry (IDs drawn)
	tag     string
	table   string
	limits  []keyLimit // the key column's end (keyrange.go)
	batch   []int64
	next    int
	drawn   int
}

func (k *keyFeed) Next() (int64, error) {
	if k.next == len(k.batch) {
		if err := k.draw(min(max(1, k.drawn), 4096)); err != nil {
			return 0, err
		}
	}
	k.next++
	return k.batch[k.next-1], nil
}

func (k *keyFeed) draw(n int) error {
	b, err := k.engine.idSource.NextN(k.ctx, k.tag, n, k.batch[:0])
	if oe := atEnd(k.limits, k.tag, n, err); oe != nil {
		oe.Row += k.drawn // atEnd counts from the batch's first key
		oe.AllPast = oe.AllPast && k.drawn == 0
		return oe
	}
	if err != nil {
		code, state := uint16(1105), "HY000"
		var se proxy.SQLError
		if errors.As(err, &se) {
			code, state = se.Code(), se.SQLState()
		}
		return errstyle.NewCoded(code, state,
			fmt.Sprintf("leafproxy: LOAD DATA into %s failed: no keys from tag %q for its rows, so the statement was refused: %v", k.table, k.tag, err))
	}
	k.session.countIDs(k.entry, int64(n))
	if err := checkIDs(k.limits, k.tag, b, k.drawn+1); err != nil {
		return err
	}
	k.batch, k.next, k.drawn = b, 0, k.drawn+n
	k.session.setLast(k.tag, b[len(b)-1])
	return nil
}
