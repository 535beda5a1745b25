package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy"
	"github.com/leafproxy/leafproxy/rewriter"
)

// MariaDB's native sequences (CREATE SEQUENCE s) are called with the same
// syntax as the proxy's tags: NEXTVAL(s), NEXT VALUE FOR db.s, LASTVAL(s),
// SETVAL(s, n). A name written as an identifier is the proxy's tag when
// the proxy has one of that name (configured, or in leaf_alloc); otherwise,
// when the session's database (or the qualifier) has a native SEQUENCE of
// that name, the statement goes to the backend as it is, and MariaDB
// answers; otherwise it is the proxy's (4091, or auto_create). A name
// written as a string (NEXTVAL('s')) is always the proxy's: MariaDB's own
// syntax has no such form. One statement cannot mix both kinds.

// knower is implemented by ID sources that can tell their tags from other
// names (allocator.Sequences).
type knower interface {
	Known(ctx context.Context, tag string) (bool, error)
}

// nativeCache remembers which names are native sequences (both answers),
// for nativeTTL; DDL seen by this proxy drops it.
type nativeCache struct {
	mu      sync.Mutex
	entries map[rewriter.SeqName]nativeEntry
}

type nativeEntry struct {
	native    bool
	checkedAt time.Time
}

const nativeTTL = 5 * time.Second

func (c *nativeCache) invalidate() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// nativeRelay reports whether plan's text is for the backend's native
// sequences alone (see nativeOnly); a text whose calls all name tags with
// strings costs nothing here.
func (e *Engine) nativeRelay(ctx context.Context, st *state, plan *rewriter.Plan) (bool, error) {
	var idents []rewriter.SeqName
	strCalls := false
	switch plan.Kind {
	case rewriter.Sequence:
		idents, strCalls = callNames(plan.Calls, st.idents[:0])
		st.idents = idents[:0]
	case rewriter.Rewrite, rewriter.Numbered:
		idents, strCalls = plan.Idents, plan.StringCalls
	}
	if len(idents) == 0 {
		return false, nil
	}
	return e.nativeOnly(ctx, st, idents, strCalls)
}

// callNames gathers how a Sequence plan's calls name their sequences.
func callNames(calls []rewriter.Call, dst []rewriter.SeqName) (idents []rewriter.SeqName, strCalls bool) {
	for _, c := range calls {
		if !c.Ident {
			strCalls = true
			continue
		}
		dst = append(dst, rewriter.SeqName{DB: c.DB, Name: c.Tag})
	}
	return dst, strCalls
}

// nativeOnly decides for a text whose calls name sequences by identifier:
// relay is true when every call names a MariaDB native sequence (the text
// goes to the backend unchanged); false when none does (the proxy plans
// it); a text with both is an error.
func (e *Engine) nativeOnly(ctx context.Context, st *state, idents []rewriter.SeqName, strCalls bool) (relay bool, err error) {
	kn, ok := e.idSource.(knower)
	if !ok || len(idents) == 0 {
		return false, nil
	}
	var native, ours []string
	for _, n := range idents {
		known, err := kn.Known(ctx, n.Name)
		if errors.Is(err, proxy.ErrWouldBlock) {
			return false, err
		}
		if known {
			ours = append(ours, n.Name)
			continue
		}
		// Not a tag the proxy knows (or the store cannot say): the
		// backend's own sequence if it has one.
		isNative, nerr := e.isNative(ctx, st, n)
		if nerr != nil {
			return false, nerr
		}
		if isNative {
			native = append(native, qualifiedName(n))
		} else {
			ours = append(ours, n.Name)
		}
	}
	switch {
	case len(native) == 0:
		return false, nil
	case len(ours) == 0 && !strCalls:
		return true, nil
	}
	return false, &notSupportedError{msg: "leafproxy: this statement uses MariaDB's native sequence(s) " + strings.Join(native, ", ") +
		" and the proxy's sequence(s) together; use them in separate statements"}
}

func qualifiedName(n rewriter.SeqName) string {
	if n.DB == "" {
		return n.Name
	}
	return n.DB + "." + n.Name
}

// isNative reports whether n is a native sequence in its database (the
// session's when unqualified), from the cache or information_schema.
func (e *Engine) isNative(ctx context.Context, st *state, n rewriter.SeqName) (bool, error) {
	key := rewriter.SeqName{DB: n.DB, Name: n.Name}
	if key.DB == "" {
		key.DB = st.env.DB
	}
	if key.DB == "" {
		return false, nil // no database: the backend would find none either
	}
	c := &e.natives
	c.mu.Lock()
	ent, ok := c.entries[key]
	c.mu.Unlock()
	if ok && time.Since(ent.checkedAt) < nativeTTL {
		return ent.native, nil
	}
	bs, err := st.session.Blocking(ctx)
	if err != nil {
		return false, err
	}
	rows, err := bs.BackendQuery(ctx, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = "+quote(key.DB)+
		" AND TABLE_NAME = "+quote(key.Name)+" AND TABLE_TYPE = 'SEQUENCE'")
	if err != nil {
		return false, err
	}
	native := len(rows) > 0
	c.mu.Lock()
	if c.entries == nil || len(c.entries) > 10000 {
		c.entries = map[rewriter.SeqName]nativeEntry{}
	}
	c.entries[rewriter.SeqName{DB: strings.Clone(key.DB), Name: strings.Clone(key.Name)}] = nativeEntry{native: native, checkedAt: time.Now()}
	c.mu.Unlock()
	return native, nil
}

// serverSyntax answers a statement the planner's parser could not read
// (rewriter.Error.Unreadable) as the server would: the server prepares it
// (COM_STMT_PREPARE runs nothing), and its error, a syntax error 1064
// above all, is the client's, as it would be directly. When the server
// can read it, the planner's own error stands (the proxy cannot plan what
// its parser cannot read).
func (e *Engine) serverSyntax(ctx context.Context, s Session, err error) error {
	var re *rewriter.Error
	if !errors.As(err, &re) || re.Unreadable() == "" {
		return err
	}
	bs, berr := s.Blocking(ctx)
	if berr != nil {
		return berr
	}
	res, perr := bs.BackendPrepare(ctx, re.Unreadable())
	if errors.Is(perr, proxy.ErrWouldBlock) {
		return perr
	}
	var me *mysql.MyError
	switch {
	case perr == nil:
		if res.OK {
			if cerr := bs.BackendCloseStmt(res.StmtID); cerr != nil {
				return cerr
			}
		}
	case errors.As(perr, &me) && me.Code != mysql.ER_UNSUPPORTED_PS:
		return me
	}
	return err
}
