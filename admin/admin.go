// Package admin answers leafproxy's own SQL for operators, through the
// proxy port, for accounts marked admin: true (others get 1227):
//
//	SHOW LEAFPROXY SEQUENCES                   -- one row per tag: this proxy's buffers, the store's row
//	SHOW LEAFPROXY SESSIONS                    -- the proxy's client sessions and their backend threads
//	CREATE LEAFPROXY SEQUENCE [IF NOT EXISTS] tag [STEP n]
//
// (SELECT SETVAL('tag', n) is answered by the engine, also for admins only.)
// It wraps the engine's Interceptor: every other statement goes on to it,
// after one cheap look at the first word.
package admin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/proxy"
)

// Sessions lists the proxy's sessions (proxy.Server.SessionList).
type Sessions func() []proxy.SessionInfo

// Interceptor answers admin statements and passes the rest to Next.
type Interceptor struct {
	proxy.Interceptor
	seq        *allocator.Sequences
	configured func() map[string]string // tag -> generator, from the config
	sessions   Sessions
}

// New wraps next. configured names the tags the configuration declares
// (with their generator); sessions may be set later with SetSessions (the
// server is built after its interceptor).
func New(next proxy.Interceptor, seq *allocator.Sequences, configured func() map[string]string) *Interceptor {
	return &Interceptor{Interceptor: next, seq: seq, configured: configured}
}

// SetSessions sets where SHOW LEAFPROXY SESSIONS reads from.
func (a *Interceptor) SetSessions(f Sessions) { a.sessions = f }

// Query answers admin statements; anything else goes to the engine.
func (a *Interceptor) Query(ctx context.Context, s *proxy.Session, sql []byte) (bool, error) {
	st, ok := parse(sql)
	if !ok {
		return a.Interceptor.Query(ctx, s, sql)
	}
	if proxy.MustNotBlock(ctx) {
		// Admin statements read the store and the allocator's state: on
		// the session's own goroutine, not an event loop's.
		return false, proxy.ErrWouldBlock
	}
	if st.err != "" {
		return false, &mysql.MyError{Code: mysql.ER_PARSE_ERROR, State: "42000", Message: st.err}
	}
	if !s.Admin() {
		return false, proxy.ErrNeedAdmin(st.what())
	}
	s.Logger().Info("admin statement", "what", st.what())
	switch st.kind {
	case showSequences:
		cols, rows, err := a.sequences(ctx)
		if err != nil {
			return false, err
		}
		return true, s.WriteTextResultSet(cols, rows)
	case showSessions:
		cols, rows := a.sessionRows()
		return true, s.WriteTextResultSet(cols, rows)
	case createSequence:
		return true, a.create(ctx, s, st)
	}
	return false, nil
}

func (a *Interceptor) create(ctx context.Context, s *proxy.Session, st stmt) error {
	if err := schema.CheckTag(st.tag); err != nil {
		return err
	}
	if gen, ok := a.configured()[st.tag]; ok && gen == "snowflake" {
		return &mysql.MyError{Code: mysql.ER_NOT_SUPPORTED_YET, State: "42000", Message: fmt.Sprintf("leafproxy: tag %q uses the snowflake generator, which has no leaf_alloc row", st.tag)}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := a.seq.StoreRows(ctx)
	if err != nil {
		return fmt.Errorf("create sequence %q: %w", st.tag, err)
	}
	if _, exists := rows[st.tag]; exists {
		if st.ifNotExists {
			return s.WriteOK(0, 0, 1)
		}
		return &mysql.MyError{Code: mysql.ER_TABLE_EXISTS_ERROR, State: "42S01", Message: fmt.Sprintf("Sequence '%s' already exists", st.tag)}
	}
	if err := a.seq.Segments().Create(ctx, st.tag, st.step); err != nil {
		return fmt.Errorf("create sequence %q: %w", st.tag, err)
	}
	return s.WriteOK(0, 0, 0)
}

var seqCols = []string{"tag", "generator", "last_value", "next_value", "buffered", "next_ready", "step",
	"store_max_id", "fetches", "fetch_errors", "last_error", "worker_id", "lease_expires", "fenced", "lease_lost"}

// sequences is one row per tag known to this proxy (configured, used, or
// in the store's leaf_alloc).
func (a *Interceptor) sequences(ctx context.Context) ([]string, [][]*string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	store, storeErr := a.seq.StoreRows(ctx)
	gens := map[string]string{}
	for t, g := range a.configured() {
		gens[t] = g
	}
	segs := a.seq.Segments()
	for _, t := range segs.Tags() {
		if _, ok := gens[t]; !ok {
			if st, ok := segs.Stats(t); ok && (st.Fetches > 0 || st.Refused > 0) {
				gens[t] = "segment"
			}
		}
	}
	for t := range store {
		if _, ok := gens[t]; !ok {
			gens[t] = "segment"
		}
	}
	tags := make([]string, 0, len(gens))
	for t := range gens {
		if utf8.ValidString(t) {
			tags = append(tags, t)
		}
	}
	slices.Sort(tags)
	str := func(v string) *string { return &v }
	num := func(v int64) *string { return str(strconv.FormatInt(v, 10)) }
	yes := func(b bool) *string {
		if b {
			return str("YES")
		}
		return str("NO")
	}
	var rows [][]*string
	for _, t := range tags {
		row := make([]*string, len(seqCols))
		row[0], row[1] = str(t), str(gens[t])
		if gens[t] == "snowflake" {
			if g := a.seq.Snowflake(); g != nil {
				fenced, lost := g.Health()
				row[11], row[13], row[14] = num(g.Worker()), yes(fenced), yes(lost)
				if exp := g.LeaseExpiry(); !exp.IsZero() {
					row[12] = str(exp.UTC().Format("2006-01-02 15:04:05.000"))
				}
			}
			rows = append(rows, row)
			continue
		}
		if st, ok := segs.Stats(t); ok && st.Current.End > 0 {
			if st.NextID > st.Current.Start {
				row[2] = num(st.NextID - 1)
			}
			buffered := st.Remaining
			switch {
			case st.NextID < st.Current.End:
				row[3] = num(st.NextID)
			case st.NextReady:
				row[3] = num(st.Next.Start)
			}
			if st.NextReady {
				buffered += st.Next.End - st.Next.Start
			}
			row[4], row[5], row[6] = num(buffered), yes(st.NextReady), num(st.Step)
			row[8], row[9] = num(int64(st.Fetches)), num(int64(st.FetchErrors))
			if st.LastErr != nil {
				row[10] = str(st.LastErr.Error())
			}
		} else if ok {
			row[8], row[9] = num(int64(st.Fetches)), num(int64(st.FetchErrors))
			if st.LastErr != nil {
				row[10] = str(st.LastErr.Error())
			}
		}
		if r, ok := store[t]; ok {
			row[7] = num(r.MaxID)
			if row[6] == nil {
				row[6] = num(r.Step)
			}
		} else if storeErr != nil && row[10] == nil {
			row[10] = str(storeErr.Error())
		}
		rows = append(rows, row)
	}
	if storeErr != nil && len(rows) == 0 {
		return nil, nil, storeErr
	}
	return seqCols, rows, nil
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
