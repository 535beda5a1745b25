// Package proxy is leafproxy's MySQL protocol core: it accepts clients,
// authenticates them with go-mysql's server package (handshake and auth
// only), opens one pinned backend connection per client session after a
// successful login, and then runs its own command loop that relays every
// command and streams every response back packet for packet.
//
// # Relay
//
// Each session has two legs (client, backend), each with its own buffered
// reader/writer and its own sequence ids. Responses are relayed packet by
// packet, renumbered for the client leg, following the response state
// machine (OK | ERR | column count -> definitions -> EOF -> rows -> EOF/ERR,
// repeated while SERVER_MORE_RESULTS_EXISTS; prepare: OK -> params+EOF ->
// columns+EOF; STMT_CLOSE and SEND_LONG_DATA: none), and the client writer
// is flushed once per response. Only the first 32 bytes of a packet are
// looked at; nothing is held per row, packets of 16 MB and more are streamed
// in their physical pieces. Prepared statements are the backend's own:
// statement ids pass through unchanged.
//
// The backend connection mirrors the client's MULTI_STATEMENTS,
// MULTI_RESULTS, PS_MULTI_RESULTS, FOUND_ROWS and IGNORE_SPACE flags and its
// collation; neither leg uses DEPRECATE_EOF, QUERY_ATTRIBUTES or LOCAL_FILES
// (LOAD DATA LOCAL INFILE is refused by the backend with its own error).
// COM_CHANGE_USER is refused (ERR 1235, session unchanged); unknown commands
// get ERR 1047 and the session goes on; a malformed packet (bad sequence id,
// truncated header, oversized) closes that session only. A backend that is
// unreachable at login is reported (ERR 1429 naming the backend address, or
// the backend's own ERR) as the answer to the client's first command, since
// go-mysql has already sent the login OK; a backend lost mid-session gets the
// client ERR 1158 (08S01) and the session closes. (Client-range codes such
// as 2003/2013 are avoided: libmariadb reports them as malformed packets.)
//
// # Seams for statement rewriting (Interceptor)
//
// WithInterceptor installs an Interceptor, consulted on the session's
// goroutine before each COM_QUERY, COM_STMT_PREPARE and COM_STMT_EXECUTE is
// relayed. With none installed the relay does no parsing and no allocation
// per command. An interceptor method either
//
//   - returns handled=false, nil: the core relays the original command;
//   - answers the command itself and returns handled=true, nil, using
//     exactly one of: Session.RelayQuery (rewritten text), RelayPrepare
//     (rewritten text; returns the backend's StmtID/Params/Columns so
//     per-statement state can be attached), RelayExecute (possibly rewritten
//     execute packet), RelayExecuteAfter (a SET pipelined before the execute:
//     one round trip), WriteOK, WriteError, WriteResultSet (text BIGINT
//     columns) or WriteBinaryResultSet (binary protocol, for an execute the
//     proxy answers itself; prepare a same-shaped statement on the backend,
//     e.g. `SELECT 0 AS nextval`, so the client's metadata matches);
//   - or returns an error before writing anything: a *mysql.MyError (go-mysql)
//     or an SQLError goes to the client as that ERR packet, any other error as
//     ERR 1105; the session stays usable.
//
// Errors from Relay*/Backend* that come from a broken connection are fatal:
// the session ends after the interceptor returns, whatever it returns.
//
// Before answering, an interceptor may run proxy-originated statements on the
// pinned backend connection without the client seeing them: BackendExec
// (affected rows, insert id) and BackendQuery (rows as text), e.g. to read
// information_schema. Session.DB() is the current database (handshake,
// COM_INIT_DB, `USE x`; re-read lazily after multi-statement queries),
// SQLMode() the session's sql_mode (read lazily, re-read after SET...,
// multi-statements and COM_RESET_CONNECTION), Status()/InTransaction() the
// backend's last reported status flags, which WriteOK and WriteResultSet
// also use. Value/SetValue hold the interceptor's per-session state;
// StmtClosed, SessionReset and SessionClosed say when to drop it.
//
// # Lifecycle
//
// Serve returns after ctx ends and a graceful shutdown: the listener closes
// (new connections are refused), idle sessions close at once, statements in
// flight finish within config Shutdown.Grace, then the rest are cut off.
// Limits.MaxConnections answers extra clients with ERR 1040. Logs are
// log/slog records with a "session" attribute; passwords and SQL text are
// never logged.
package proxy
