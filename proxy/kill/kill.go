package kill

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/internal/killsql"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// MariaDB's error codes for KILL that go-mysql does not name.
const (
	erNoSuchQuery            = 1957 // Unknown query id: %lld
	erSubqueriesNotSupported = 1970 // %s does not support subqueries or stored functions
)

// KILL through the proxy: every form MariaDB accepts, answered as the
// server answers it, but only ever reaching backend threads of this proxy's
// own sessions (a KILL relayed as written could end a thread of a client
// that never went through the proxy).
//
// The ids a client can name are the proxy's greeting ids and the backend
// thread ids of the proxy's sessions (CONNECTION_ID()). An id written as an
// expression (KILL CONNECTION_ID(), KILL @id, KILL 1+1) is evaluated by the
// session's backend first: the statement is prepared there as written (so
// a syntax error or an unknown column is the server's own error, word for
// word), then the expression is evaluated (killsql.EvalID).
//
// Reading the statement and writing what the backend is sent is package
// internal/killsql's (pure, no session); this file carries a KILL out:
// finds the session it names, checks that the caller may kill it, and
// relays the KILL with the target's backend thread id.

// killMapped carries out a KILL statement (text or prepared) or
// COM_PROCESS_KILL.
func killMapped(ctx context.Context, s Session, k killsql.Req, validated bool) error {
	if k.Expr != nil || k.User {
		if !validated {
			if err := validateKill(ctx, s, k); err != nil {
				return killFailed(s, err)
			}
		}
		if k.User {
			return killUser(ctx, s, k)
		}
		id, err := evalKillID(ctx, s, k.Expr)
		if err != nil {
			return killFailed(s, err)
		}
		k.ID = id
	}
	if k.QueryID {
		return killQueryID(ctx, s, k)
	}
	return killThread(s, k)
}

// validateKill prepares the KILL statement as the client wrote it (k.text)
// on the session's backend and closes it again: preparing kills nothing,
// and a statement the server cannot read fails here with the server's own
// error, word for word.
func validateKill(ctx context.Context, s Session, k killsql.Req) error {
	if k.Text == nil {
		return nil // prepared by the client: the backend has read it already
	}
	return s.BackendCheck(ctx, string(k.Text))
}

// killFailed answers a backend ERR met while reading a KILL, or ends the
// session on a broken backend connection.
func killFailed(s Session, err error) error {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return s.WriteErr(me.Code, me.State, me.Message)
	}
	return s.Fatal(err)
}

// evalKillID has the backend evaluate a KILL's id expression.
func evalKillID(ctx context.Context, s Session, expr []byte) (uint64, error) {
	rows, err := s.BackendQuery(ctx, killsql.EvalID(expr))
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == erSubqueriesNotSupported {
		if killsql.KillRefuses(expr) {
			return 0, &mysql.MyError{Code: me.Code, State: me.State, Message: killsql.SubqueriesMessage}
		}
		// KILL takes a subquery that reads no table, (SELECT 5); USING
		// takes none.
		rows, err = s.BackendQuery(ctx, killsql.EvalIDSubquery(expr))
	}
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		return 0, wire.ProtocolError("KILL id evaluation: %d rows", len(rows))
	}
	if rows[0][0] == nil {
		return 0, nil
	}
	v, err := strconv.ParseInt(*rows[0][0], 10, 64)
	if err != nil {
		return 0, wire.ProtocolError("KILL id evaluation: %v", err)
	}
	return uint64(v), nil
}

// killThread carries out KILL [CONNECTION|QUERY] n. n is the id a client was
// greeted with (what the mariadb CLI's Ctrl-C, Connector/J's cancel and
// mysql2 send) or a backend thread id one of this proxy's sessions runs on
// (what CONNECTION_ID() returned). Either way the KILL goes to that
// session's backend thread, and only when it belongs to the same proxy user
// (or the caller is an admin). Any other id is "Unknown thread id", as the
// server says for threads one may not see: it never reaches a thread the
// proxy did not open. A session killing itself hears what the server says
// (1927 Connection was killed, or 1317 for its own query) and is closed.
func killThread(s Session, k killsql.Req) error {
	var target Target
	if k.ID <= 1<<32-1 {
		target = s.Lookup(uint32(k.ID))
	}
	if !mayKill(s, target) {
		return s.WriteErr(mysql.ER_NO_SUCH_THREAD, "HY000", fmt.Sprintf("Unknown thread id: %d", k.ID))
	}
	tid := target.ThreadID()
	what := "QUERY"
	if k.Connection {
		what = "CONNECTION"
	}
	s.Log().Info("kill", "target_session", target.ClientID(), "backend_thread", tid, "what", what)
	ok, err := s.RelayStatement(k.ThreadStatement(uint64(tid)))
	if err != nil {
		return err
	}
	if ok && k.Connection && target != s {
		// The backend has been told to end the target's thread; it does so
		// on its own time and says nothing to an idle connection. Close an
		// idle target's client now, before the killer hears OK, so its
		// next command meets a closed connection (2013, which clients and
		// pools treat as lost) as it would directly, not ERR 1158 from a
		// proxy that has not yet noticed.
		target.CloseIfIdle()
	}
	return s.Flush()
}

// mayKill reports whether this session's KILL may go to target's thread:
// a session of the same proxy user, any session for an admin, and a
// session logged in to the backend as another account, where the backend
// decides with its own privileges (1095 without CONNECTION ADMIN, as
// directly). Proxy users sharing one backend account cannot kill each
// other's sessions: the backend could not tell them apart. A session the
// backend authenticated itself (backend-account mode) is logged in as the
// client's own account, not as Account.BackendUser (which there only names
// the proxy's side connections), so the backend tells every such session
// apart and decides.
func mayKill(s Session, target Target) bool {
	if target == nil {
		return false
	}
	if target == s {
		return true
	}
	user, login, admin := s.Owner()
	if admin {
		return true
	}
	targetUser, targetLogin, _ := target.Owner()
	return targetUser == user || targetLogin != login
}

// killQueryID carries out KILL [HARD|SOFT] QUERY ID n: the query is looked
// up in the backend's processlist (the caller's view, else the proxy
// account's), and the KILL is relayed only when the thread running it is
// one of this proxy's sessions the caller may kill (query ids are unique
// server-wide, so the relayed KILL cannot reach another query; for another
// backend account's query the backend answers, 1979 without the
// privilege). Otherwise: 1957 Unknown query id, as the server says.
func killQueryID(ctx context.Context, s Session, k killsql.Req) error {
	n := strconv.FormatUint(k.ID, 10)
	rows, err := s.BackendQuery(ctx, killsql.ThreadOfQuery(k.ID))
	if err != nil {
		return killFailed(s, err)
	}
	var tid uint32
	if len(rows) == 1 && rows[0][0] != nil {
		if v, err := strconv.ParseUint(*rows[0][0], 10, 32); err == nil {
			tid = uint32(v)
		}
	} else {
		// Not in the caller's view: another account's query, which the
		// backend may refuse in its own words if it runs in one of the
		// proxy's sessions.
		tid = s.QueryThread(ctx, k.ID)
	}
	var target Target
	if tid != 0 {
		target = s.LookupThread(tid)
	}
	if !mayKill(s, target) {
		return s.WriteErr(erNoSuchQuery, "HY000", "Unknown query id: "+n)
	}
	s.Log().Info("kill", "target_session", target.ClientID(), "query_id", k.ID, "what", "QUERY ID")
	if _, err = s.RelayStatement(k.QueryStatement(k.ID)); err != nil {
		return err
	}
	return s.Flush()
}

// killUser carries out KILL [HARD|SOFT] [CONNECTION|QUERY] USER account:
// each thread of the account that the backend lists and that runs one of
// this proxy's sessions the caller may kill is killed with a KILL of its
// own; threads of clients that did not come through the proxy are left
// alone, as the server leaves threads one may not see. The answer is the
// server's: OK with the number of threads killed (a session killing its
// own query counts itself, as the server does; one killing its own
// connection hears the OK and is then closed).
func killUser(ctx context.Context, s Session, k killsql.Req) error {
	user, host, err := killUserAccount(ctx, s, k.Expr)
	if err != nil {
		return killFailed(s, err)
	}
	rows, err := s.BackendQuery(ctx, killsql.ThreadsOfUser(user))
	if err != nil {
		return killFailed(s, err)
	}
	what := "QUERY "
	if k.Connection {
		what = "CONNECTION "
	}
	var killed uint64
	self := false
	for _, r := range rows {
		if len(r) != 2 || r[0] == nil || r[1] == nil {
			continue
		}
		tid, err := strconv.ParseUint(*r[0], 10, 32)
		if err != nil || host != "" && !killsql.WildMatch(killsql.HostOnly(*r[1]), host) {
			continue
		}
		target := s.LookupThread(uint32(tid))
		switch {
		case !mayKill(s, target):
			continue
		case target == s:
			self = true
			killed++
			continue
		}
		s.Log().Info("kill", "target_session", target.ClientID(), "backend_thread", tid, "what", "USER "+what)
		err = s.BackendExec(ctx, k.ThreadStatement(tid))
		var me *mysql.MyError
		if errors.As(err, &me) && me.Code == mysql.ER_NO_SUCH_THREAD {
			continue // it ended meanwhile
		} else if err != nil {
			return killFailed(s, err)
		}
		killed++
		if k.Connection {
			target.CloseIfIdle()
		}
	}
	if err := s.WriteOK(killed); err != nil || !self || !k.Connection {
		return err
	}
	s.Log().Info("kill", "target_session", s.ClientID(), "backend_thread", s.ThreadID(), "what", "USER "+what)
	_ = s.BackendExec(ctx, k.ThreadStatement(uint64(s.ThreadID())))
	return s.Quit()
}

// killUserAccount reads the account of KILL USER (killsql.ParseAccount),
// asking the backend for CURRENT_USER() when the statement names it.
func killUserAccount(ctx context.Context, s Session, spec []byte) (user, host string, err error) {
	user, host, current := killsql.ParseAccount(spec)
	if !current {
		return user, host, nil
	}
	rows, err := s.BackendQuery(ctx, "SELECT CURRENT_USER()")
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 || rows[0][0] == nil {
		return "", "", err
	}
	user, host = killsql.SplitAccount(*rows[0][0])
	return user, host, nil
}
