// Package admin answers leafproxy's own SQL for operators, through the
// proxy port, for accounts marked admin: true (others get 1227):
//
//	SHOW LEAFPROXY SEQUENCES [LIKE 'pat' | WHERE expr] -- one row per tag: buffers, layout, runway, the store's row
//	SHOW LEAFPROXY SESSIONS                    -- the proxy's client sessions and their backend threads
//	SHOW LEAFPROXY TABLES                      -- per table rule, the tables it fills and those a pattern leaves alone
//	CREATE LEAFPROXY SEQUENCE [IF NOT EXISTS] tag [START [WITH] n] [STEP n]
//	CREATE LEAFPROXY SEQUENCE [IF NOT EXISTS] tag SNOWFLAKE
//	       [LAYOUT js_safe | LAYOUT default | LAYOUT (time_bits, worker_bits, sequence_bits)] [EPOCH 'time']
//	ALTER LEAFPROXY SEQUENCE tag STEP n
//	DROP LEAFPROXY SEQUENCE [IF EXISTS] tag   -- refused while a table rule or sequences.tags names it
//
// (SELECT SETVAL('tag', n) is answered by the engine, also for admins only.)
// It wraps the engine's Interceptor: every other statement goes on to it,
// after one look at the class the proxy made of it (proxy.Session.Class).
package admin

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/internal/sqltext"
	"github.com/leafproxy/leafproxy/proxy"
)

// Sessions lists the proxy's sessions (proxy.Server.SessionList).
type Sessions func() []proxy.SessionInfo

// Runway is a tag's last runway estimate (runway.Monitor.Get).
type Runway func(tag string) (runway.Estimate, bool)

// TableRow is one table a rule matches on the backend, as SHOW LEAFPROXY
// TABLES shows it: the rule (tables[i] and its table), the table
// (db.table), what the rule does with it ("filled" or "left alone"), the
// tag it is filled from, and why a pattern leaves it alone (or why an
// exact rule cannot fill it).
type TableRow struct {
	Rule, RuleTable, Table, Action, Tag, Why string
}

// Tables reads what each table rule covers on the backend now.
type Tables func(ctx context.Context) ([]TableRow, error)

// Interceptor answers admin statements and passes the rest to Next.
type Interceptor struct {
	proxy.Interceptor
	idSequences *allocator.Sequences
	config      func() *allocator.Config // the allocator configuration in force
	sessions    Sessions
	runway      Runway
	tables      Tables
	now         func() time.Time
}

// New wraps next. config returns the allocator configuration in force
// (the tags it declares, the table rules); sessions and the runway may be
// set later (SetSessions, SetRunway).
func New(next proxy.Interceptor, seq *allocator.Sequences, config func() *allocator.Config) *Interceptor {
	return &Interceptor{Interceptor: next, idSequences: seq, config: config, now: time.Now}
}

// SetSessions sets where SHOW LEAFPROXY SESSIONS reads from.
func (a *Interceptor) SetSessions(f Sessions) { a.sessions = f }

// SetTables sets where SHOW LEAFPROXY TABLES reads from.
func (a *Interceptor) SetTables(f Tables) { a.tables = f }

// SetRunway sets where SHOW LEAFPROXY SEQUENCES reads runway estimates.
func (a *Interceptor) SetRunway(f Runway) { a.runway = f }

// Query answers admin statements; anything else goes to the engine.
func (a *Interceptor) Query(ctx context.Context, s *proxy.Session, sql []byte) (bool, error) {
	return a.query(ctx, s, sql, s.Class())
}

// query is Query with sql's class (the proxy's, made once per command).
func (a *Interceptor) query(ctx context.Context, s *proxy.Session, sql []byte, c sqltext.Class) (bool, error) {
	st, ok := parse(sql, c)
	if !ok {
		return a.Interceptor.Query(ctx, s, sql)
	}
	return a.answer(ctx, s, st, sql)
}

// client is what the interceptor is given of a client's session
// (*proxy.Session; the unit tests' is a fake): calls that do not wait,
// and Blocking, the one way to those that do.
type client interface {
	Admin() bool
	User() string
	RemoteAddr() string
	Who() string
	Logger() *slog.Logger
	WriteOK(affected, insertID uint64, warnings uint16) error
	WriteTextResultSet(cols []string, rows [][]*string) error
	Blocking(ctx context.Context) (proxy.BlockingSession, error)
}

var _ client = (*proxy.Session)(nil)

// session is what the admin statements use: the client's calls and its
// waiting ones (BackendExec, BackendQuery), which only answer hands out.
type session struct {
	client
	proxy.BlockingSession
}

// answer runs admin statement st (sql's text) and audits it. On an event
// loop Blocking is ErrWouldBlock before anything is done: admin
// statements read the store and the allocator's state, so they run on
// the session's own goroutine.
func (a *Interceptor) answer(ctx context.Context, c client, st stmt, sql []byte) (bool, error) {
	bs, err := c.Blocking(ctx)
	if err != nil {
		return false, err
	}
	s := session{c, bs}
	handled, result, err := a.run(ctx, s, st)
	audit(s, st, sql, result, err)
	return handled, err
}

// run carries out an admin statement; result says what it did (see
// audit), err is what the client is told instead of an answer.
func (a *Interceptor) run(ctx context.Context, s session, st stmt) (handled bool, result string, err error) {
	if st.err != "" && !st.badArg && !st.unsupported {
		return false, "", &mysql.MyError{Code: mysql.ER_PARSE_ERROR, State: "42000", Message: st.err}
	}
	if !s.Admin() {
		return false, "", proxy.ErrNeedAdmin(st.what())
	}
	if st.unsupported {
		return false, "", &mysql.MyError{Code: mysql.ER_NOT_SUPPORTED_YET, State: "42000", Message: st.err}
	}
	if st.err != "" {
		return false, "", badArgument(st.err)
	}
	switch st.kind {
	case showSequences:
		cols, rows, err := a.sequences(ctx)
		if err != nil {
			return false, "", err
		}
		if st.filter != "" {
			if rows, err = filterRows(ctx, s, cols, rows, st.filter); err != nil {
				return false, "", err
			}
		}
		return true, "ok", s.WriteTextResultSet(cols, rows)
	case showSessions:
		cols, rows := a.sessionRows()
		return true, "ok", s.WriteTextResultSet(cols, rows)
	case showTables:
		rows, err := a.tableRows(ctx)
		if err != nil {
			return false, "", err
		}
		return true, "ok", s.WriteTextResultSet(tableCols, rows)
	case createSequence:
		result, err := a.create(ctx, s, st)
		return true, result, err
	case alterSequence:
		result, err := a.alter(ctx, s, st)
		return true, result, err
	case dropSequence:
		result, err := a.drop(ctx, s, st)
		return true, result, err
	}
	return false, "", nil
}

// badArgument is MariaDB's 1210 (ER_WRONG_ARGUMENTS, HY000).
func badArgument(msg string) error {
	return &mysql.MyError{Code: mysql.ER_WRONG_ARGUMENTS, State: "HY000", Message: msg}
}

var sessionCols = []string{"id", "thread_id", "user", "host", "db", "command", "time"}

func (a *Interceptor) sessionRows() ([]string, [][]*string) {
	var list []proxy.SessionInfo
	if a.sessions != nil {
		list = a.sessions()
	}
	slices.SortFunc(list, func(x, y proxy.SessionInfo) int { return int(x.ID) - int(y.ID) })
	now := time.Now()
	rows := make([][]*string, 0, len(list))
	for _, si := range list {
		v := []string{strconv.FormatUint(uint64(si.ID), 10), strconv.FormatUint(uint64(si.ThreadID), 10),
			si.User, si.Remote, si.DB, si.Command, strconv.FormatInt(int64(now.Sub(si.Since)/time.Second), 10)}
		row := make([]*string, len(v))
		for i := range v {
			row[i] = &v[i]
		}
		if si.DB == "" {
			row[4] = nil
		}
		rows = append(rows, row)
	}
	return sessionCols, rows
}

// The engine's optional statement hooks (long data, reset) pass through the
// wrapper: without them a prepared statement's long data would reach the
// wrong parameter of a statement with generated keys.
var _ proxy.StmtDataInterceptor = (*Interceptor)(nil)

// SendLongData passes COM_STMT_SEND_LONG_DATA on to the wrapped interceptor.
func (a *Interceptor) SendLongData(s *proxy.Session, stmtID uint32, pkt []byte) {
	if sd, ok := a.Interceptor.(proxy.StmtDataInterceptor); ok {
		sd.SendLongData(s, stmtID, pkt)
	}
}

// StmtReset passes COM_STMT_RESET on to the wrapped interceptor.
func (a *Interceptor) StmtReset(s *proxy.Session, stmtID uint32) {
	if sd, ok := a.Interceptor.(proxy.StmtDataInterceptor); ok {
		sd.StmtReset(s, stmtID)
	}
}

var tableCols = []string{"rule", "rule_table", "table", "action", "tag", "why"}

// tableRows is SHOW LEAFPROXY TABLES' rows, read from the backend now.
func (a *Interceptor) tableRows(ctx context.Context) ([][]*string, error) {
	if a.tables == nil {
		return [][]*string{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := a.tables(ctx)
	if err != nil {
		return nil, &mysql.MyError{Code: mysql.ER_UNKNOWN_ERROR, State: "HY000", Message: "leafproxy: cannot read the tables the rules match: " + err.Error()}
	}
	rows := make([][]*string, 0, len(list))
	for _, t := range list {
		v := []string{t.Rule, t.RuleTable, t.Table, t.Action, t.Tag, t.Why}
		row := make([]*string, len(v))
		for i := range v {
			if v[i] != "" {
				row[i] = &v[i]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}
