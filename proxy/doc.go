// Package proxy is leafproxy's MySQL protocol core: it accepts clients,
// greets them as their backend would, authenticates them against the
// proxy's accounts or has the backend authenticate them (backend-account
// mode, passthrough.go), opens one pinned backend connection per client session,
// and runs its own command loop that relays every command and streams every
// response back packet for packet. go-mysql supplies constants and auth
// scrambles only; framing and parsing are ours.
//
// Files: server.go (the Server, its options, Serve and Shutdown, a
// connection's way from handshake to session), frontdoorglue.go (what
// package proxy/frontdoor, the accept loop, the doorman and the admission
// budgets, needs of the server), handshake.go (client login: the probe login),
// backendglue.go (what package proxy/backend needs of the server),
// backendstate.go (the backend's reachability, logged once per change),
// passthrough.go (logins the backend authenticates: admins,
// backend.PassThrough), auth_changeuser.go (COM_CHANGE_USER applied to the
// session; the relayed exchange is login.RelayChangeUser), loginglue.go
// (what package proxy/login needs of the server),
// session.go (the session's state and command loop), idlewatch.go (what
// package proxy/idle's idle watch needs of a session), dispatch.go (one method per command kind, large commands),
// killglue.go (what package proxy/kill, which decides and carries out
// every KILL, needs of a session and of the server's session registry),
// hangup.go and sessionendglue.go (a session's end, carried out as
// package proxy/sessionend decides; the hang-up watch's sessions),
// relay.go (what a relayed command changes in the session's view of the
// backend; the response walker is package proxy/relay's, its glue
// relayglue.go; the one response state machine, which the walker and the
// event loop both feed, is wire.RespTracker, told about the backend
// session through trackerglue.go), retry.go (an AnswerWatcher's verdict,
// package proxy/relay's Judge, carried out), seams.go (the Interceptor
// contract and the Session methods it uses), blocking.go (BlockingSession,
// the calls that may wait), backendstmt.go and infile.go (the relays an
// interceptor asks for: a rewritten text, a LOCAL INFILE statement),
// interceptglue.go (what package proxy/intercept needs of a session),
// keyword.go (the command's class, USE's name), legpools.go (the idle
// legs' buffer pools), stats.go (the statement path's metrics, counted by
// package proxy/cmdstats).
// Package proxy/intercept does the work of what a session offers an
// interceptor besides relaying (Backend*, ExecuteResult, RelayPrepareHidden,
// RelayExecuteAfter, RelayQueryWriter, WriteOK and result sets, a LOCAL
// INFILE file through a transformer).
// What a login needs no session for is package proxy/login's: the
// greeting and the capability sets it offers and mirrors, the client's
// handshake response (TLS included), the check of its credentials against
// the proxy's accounts, the failed-login budget of each client host (1129
// while it is spent), TLS set-up, and the auth exchange relayed between a
// client and a backend connection, and the handshake budget shared
// fairly between client hosts (login.Pending).
// The backend side of a login is package proxy/backend's: dialing
// backend.addr, the backend's greeting, the backend leg's handshake
// response, TLS and compression on that leg, its authentication
// exchange, backend-account mode's relayed login (backend.Pending), and
// what a client is told when the backend refuses or cannot be reached.
// The protocol's bytes are package proxy/wire's: a leg's packet framing
// over its buffered connection (wire.Leg), the raw socket I/O under it
// (LEAFPROXY_RAWIO=0 turns it off), compression frames, the greeting and
// handshake response, packet classifiers and builders, the response state
// machine (RespTracker), the encoding of typed result rows and the
// COM_STMT_EXECUTE decoder.
// commandexec.go is the one seam between a session and the event loop
// (docs/eventloop.md): Session.exec is onGoroutine, or the session's
// laneSession while a loop serves it (laneglue_linux.go). A session while
// the loop serves it, reading, running and relaying on non-blocking
// sockets, is package proxy/lane (lane.Lane); moving a session onto a
// loop and taking it back is handoff_linux.go. The loop's engine, the
// epoll instance and its runners, is package proxy/eventloop, which calls
// a lane through eventloop.Handler.
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
// Each session has two legs (client, backend), each with its own buffered
// reader/writer and its own sequence ids. Responses are relayed packet by
// packet, renumbered for the client leg, following the one response state
// machine, proxy/wire's RespTracker (fed by proxy/relay's walker on a session's
// goroutine and by the lane on an event loop): OK | ERR | LOCAL INFILE |
// column count -> definitions -> EOF -> rows -> EOF/ERR, repeated while
// SERVER_MORE_RESULTS_EXISTS; prepare: OK -> params+EOF -> columns+EOF;
// STMT_CLOSE and SEND_LONG_DATA: none. The same walker consumes the
// responses to proxy-originated statements. The client writer is flushed
// once per response. Only the first 32 bytes of a relayed packet are looked
// at; nothing is held per row, packets of 16 MB and more are streamed in
// their physical pieces. Prepared statements are the backend's own:
// statement ids pass through unchanged; MariaDB's id 0xFFFFFFFF ("the
// statement prepared last") is resolved before an interceptor sees it.
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
// # Limits on hostile input (the front door)
//
// Asserted by frontdoor_test.go and handshake_fuzz_test.go:
//
//   - Before authentication every packet is limited to login.PreAuthMaxPacket
//     (64 KiB); a longer claim (e.g. a header ff ff ff 01, 16 MB) closes the
//     connection at once without reading or reserving it. A malformed
//     handshake response (user, db or attributes without terminator or
//     longer than the packet, no protocol 4.1) gets ERR 1043 "Bad handshake";
//     the parsers are fuzzed and never read or allocate beyond the packet.
//   - Connections still in the handshake have their own budget,
//     limits.max_handshakes (default 1024; when full the oldest pending one
//     is closed), and deadline, limits.handshake_timeout (default 5 s); they
//     never take limits.max_connections slots. Memory they can hold: at most
//     max_handshakes x (64 KiB packet + 2 KiB buffers + a goroutine), about
//     70 MiB at the default (tested: 200 unauthenticated 16 MB claims, and
//     200 held 64 KiB-1 claims, grow the heap by less than 64 MiB). On
//     Linux with proxy accounts, connections greeted that have sent
//     nothing yet have no goroutine and no buffers, and a budget of their
//     own, limits.max_silent_handshakes (default 16,384, at most half the
//     open-file limit; dropped the same way), and a deadline of
//     handshake_timeout plus a random part of up to half of it. 4,096
//     silent connections do not stop a real client from logging in and
//     querying.
//   - After login, commands up to 1 MiB use the session's own buffer; larger
//     ones reserve their bytes from limits.command_memory (default 512 MiB)
//     as they arrive, and a command that cannot get its share within 10 s
//     gets ERR 1041 and its connection closes; one larger than the whole
//     budget gets 1041 naming limits.command_memory at once, after its
//     remaining bytes are read and dropped (so the client reads it in
//     sequence). The budget counts payload
//     bytes; buffer growth and garbage-collector pacing make the heap a
//     small multiple of it (tested on the binary in a child process: 4
//     clients sending 256 MiB with a 64 MiB budget grow its peak resident
//     set by less than 4 x command_memory). Commands of
//     16 MiB and more (several
//     physical packets, total unknown until the last) are read one at a
//     time server-wide, each piece within a minute, so several of them
//     cannot starve one another holding parts of the budget (tested: 4 x
//     40 MiB with a 64 MiB budget all succeed).
//   - A backend that takes no bytes (stopped, a full network path) stops
//     the proxy reading its client, on an event loop (after 64 KiB held for
//     the backend, lane.backendFull) as on a session's goroutine (whose
//     write blocks): a client pipelining COM_STMT_SEND_LONG_DATA, which has
//     no answer, then waits in its socket (tested, pushback_test.go: with
//     48 MiB sent to a stopped backend the heap grows less than 16 MiB).
//   - A client aborting TLS, or any other failed handshake, costs one log
//     line without a stack trace.
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
