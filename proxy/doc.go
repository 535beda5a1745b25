// Package proxy is leafproxy's MySQL protocol core: it accepts clients,
// greets them as their backend would, authenticates them against the
// proxy's accounts or has the backend authenticate them (backend-account
// mode), opens one pinned backend connection per client session, and runs
// its command loop, which relays every command and streams every response
// back packet for packet. go-mysql supplies constants and auth scrambles
// only; framing and parsing are ours.
//
// What it owns: the Server (server.go: options, Serve, Shutdown, a
// connection's way from handshake to session) and the Session (session.go:
// its state groups and command loop; dispatch.go: one method per command
// kind; relay.go and retry.go: what a relayed command changes in the
// session's view of the backend, and an AnswerWatcher's verdict carried
// out; handoff_linux.go: moving onto an event loop and back;
// commandexec.go: the one seam between a session and whoever serves it,
// docs/eventloop.md), the Interceptor contract (seams.go, blocking.go,
// backendstmt.go, infile.go), the command's class (keyword.go), change
// user applied to a session (auth_changeuser.go), the statement path's
// metrics (stats.go) and the session registry (serverregistry.go).
//
// What it calls: each sub-package below sees the server or a session only
// through an interface or values of its own, implemented by the glue file
// named after it (killglue.go, laneglue_linux.go, ...), so that none of
// them imports package proxy:
//   - proxy/wire: the protocol's bytes (legs, raw socket I/O, compression,
//     greeting and handshake codec, OK/ERR/EOF, RespTracker, result rows,
//     the COM_STMT_EXECUTE decoder);
//   - proxy/frontdoor: Listen, the accept loop, the doorman, the handshake
//     and session admission budgets, Shutdown's sequence;
//   - proxy/login: the greeting and capabilities, the client's handshake
//     response and credential check, the failed-login throttle, TLS set-up,
//     relayed auth and COM_CHANGE_USER's relayed exchange;
//   - proxy/backend: dialing the backend and logging into it, backend-account
//     mode's relayed login, what a client is told when the backend refuses;
//   - proxy/eventloop and proxy/lane: the epoll engine, and a session while
//     a loop serves it;
//   - proxy/relay: the response walker on a session's goroutine and the
//     AnswerWatcher verdicts;
//   - proxy/intercept: what a session offers an interceptor besides
//     relaying (Backend*, ExecuteResult, hidden parameters, result sets,
//     LOCAL INFILE through a transformer);
//   - proxy/kill: every KILL, decided and carried out;
//   - proxy/idle, proxy/sessionend, proxy/cmdstats: a session between
//     commands, how it ends, its metrics.
//
// # Looking like the backend
//
// The greeting, the capabilities it offers and how a login reaches the
// backend are package proxy/login's (its doc.go, with COM_CHANGE_USER's)
// and proxy/backend's.
//
// # Connection ids and KILL
//
// In backend-account mode (no users) each session is greeted with its
// backend connection's thread id, so the greeting, CONNECTION_ID() and the
// processlist agree as directly. With users each session is greeted with
// a proxy id (from 2^30 up, so it never equals a backend thread id). What
// a KILL through the proxy does in either mode, and how, is package
// proxy/kill's (its doc.go); this package asks kill.Decide once per
// command (Session.decideKill, killglue.go), hands a KILL to kill.Run,
// and closes a session whose response ended in 1927 once its backend
// connection has ended (Session.endIfKilled).
//
// # How sessions end
//
// Why a session ends, how its end reaches the backend (COM_QUIT, or not,
// as the client did; KILL QUERY for a statement whose client went away)
// and the hang-up watch are package proxy/sessionend's (its doc.go); the
// session carries its plan out (hangup.go, sessionendglue.go).
//
// # Relay
//
// How a response is relayed, packet by packet, is package proxy/relay's
// (its doc.go) on a session's goroutine and proxy/lane's on an event loop.
//
// Between commands the session watches its backend: on its goroutine
// the idle watch, its deadlines and its check of the backend connection
// are package proxy/idle's (its doc.go; idlewatch.go calls it), as are
// the idle sessions' memory given back and the command memory budget; on
// an event loop the epoll instance watches both sockets.
//
// Unknown commands get ERR 1047 and the session goes on; a malformed packet
// (bad sequence id, truncated header, oversized) closes that session only. A
// backend lost while a command runs closes the client connection, as the
// server's own would (drivers see 2013 and pools reconnect); only when part
// of the answer was already relayed does the client get ERR 1158 (08S01)
// first. (Client-range codes such as 2003/2013 are avoided: libmariadb
// reports them as malformed packets.)
//
// # Seams for statement rewriting (Interceptor)
//
// WithInterceptor installs an Interceptor, consulted before each
// COM_QUERY, COM_STMT_PREPARE, COM_STMT_EXECUTE and COM_STMT_BULK_EXECUTE
// is relayed, on whichever goroutine serves the session: an event loop's
// (docs/ARCHITECTURE.md, "Who runs a session") or the session's own. On an
// event loop the context is marked (MustNotBlock): a method that would
// wait (for an ID source, a store, the backend's answer to a statement of
// its own) must return ErrWouldBlock, possibly wrapped, before writing
// anything; the command is then run again from the start on the session's
// goroutine, where the same call may wait. Session methods that need an
// answer now (BackendQuery, BackendExec, RelayPrepare, RelayPrepareHidden,
// ExecuteResult, RelayQueryInfile: the BlockingSession interface, whose
// methods are not Session's: Session.Blocking hands them out only off a
// loop; CurrentDB/SQLMode return ErrWouldBlock themselves on a loop when
// they must re-read); RelayQuery and RelayExecute return
// at once there and the response is relayed as it arrives.
//
// What a COM_QUERY or COM_STMT_PREPARE text is (its first words, whether
// more statements follow, whether it may be a KILL, hold a sequence call
// or DDL, or be an admin statement) is read once per command, by one pass
// of internal/sqltext.Classify in the command's method (comQuery,
// comPrepare, which dispatch calls), before anything else looks at
// it (keyword.go); KILL's reading (internal/killsql), the relay's USE / SET
// sql_mode / multi-statement tracking and the interceptor (Session.Class,
// valid during Query and Prepare) all take that value instead of reading
// the text again. A command an event loop hands back to the session's
// goroutine keeps the class the loop read (handBack.class); a text an
// interceptor relays is classified afresh only when it is not the
// command's own. The proxy still knows no SQL plans:
// the class says what kind of statement a text is, never what to do with
// it. Beyond that the relay does no parsing and no allocation per command.
// An interceptor method either
//
//   - returns handled=false, nil: the core relays the original command;
//   - answers the command itself and returns handled=true, nil, using
//     exactly one of: Session.RelayQuery (rewritten text),
//     RelayQueryInfile (rewritten text whose LOCAL INFILE file goes through
//     an InfileTransformer), RelayPrepare
//     (rewritten text; returns the backend's StmtID/Params/Columns so
//     per-statement state can be attached), RelayPrepareHidden (the same
//     for a text with extra parameters the interceptor binds itself: the
//     client sees only its own), RelayExecute (possibly rewritten
//     execute packet), ExecuteResult (an execute or bulk execute without
//     relaying, then WriteOK), WriteOK, WriteError, WriteResultSet (text
//     BIGINT columns), WriteTextResultSet (text VARCHAR columns, for the
//     proxy's own SHOW statements), WriteBinaryResultSet (binary
//     protocol, for an execute the proxy answers itself; prepare a
//     same-shaped statement on the backend, e.g. `SELECT 0 AS nextval`, so
//     the client's metadata matches), or WriteRows / WriteBinaryRows
//     (typed columns: BIGINT, INT, VARCHAR, DATETIME(3), with NULLs; text
//     and binary protocol, proxy/intercept and wire/resultrows.go);
//   - or returns an error before writing anything: a *mysql.MyError (go-mysql)
//     or an SQLError goes to the client as that ERR packet, any other error as
//     ERR 1105; the session stays usable.
//
// An Interceptor that also implements StmtDataInterceptor sees
// COM_STMT_SEND_LONG_DATA (and may rewrite its parameter index in place)
// and COM_STMT_RESET before they are relayed; neither answers the client.
//
// Errors from Relay*/Backend* that come from a broken connection are fatal:
// the session ends after the interceptor returns, whatever it returns.
//
// Before answering, an interceptor may run proxy-originated statements on the
// pinned backend connection without the client seeing them: BackendExec
// (affected rows, insert id) and BackendQuery (rows as text), e.g. to read
// information_schema. Session.DB() is the current database (handshake,
// COM_INIT_DB, `USE x`; re-read lazily after multi-statement queries),
// SQLMode() the session's sql_mode (read lazily, re-read after a SET that
// names sql_mode, multi-statements, COM_RESET_CONNECTION and change user);
// a re-read is a statement in the client's session (its Questions, the
// general log), so interceptors ask only when a plan needs them,
// Status()/InTransaction() the backend's last reported status flags, which
// WriteOK and WriteResultSet also use. Value/SetValue hold the
// interceptor's per-session state; StmtClosed, SessionReset (also after a
// change user) and SessionClosed say when to drop it.
//
// # Limits on hostile input
//
// What a hostile client can make the proxy hold, before login and after,
// and which tests assert it: package proxy/frontdoor's doc.go.
//
// # Lifecycle
//
// Serve returns after ctx ends and a graceful shutdown: the listener closes
// (new connections are refused), pending handshakes and idle sessions close
// at once, statements in flight finish within config Shutdown.Grace, then
// the rest are cut off. listen and backend.addr may be Unix socket paths.
// Logs are log/slog records with a "session" attribute (the id the client
// was greeted with; in backend-account mode, until the login is done, the
// proxy's own number for the connection);
// passwords and SQL text are never logged.
package proxy
