// Package kill is KILL through leafproxy: which command is (or holds) a
// KILL the proxy must act on and which way it is carried out, and
// carrying it out, answered as the server answers it but only ever
// reaching backend threads of the proxy's own sessions. How a KILL
// statement reads, and the SQL the proxy sends the backend for it, are
// package internal/killsql's; sessions, their legs and the server's
// session registry are package proxy's.
//
// What it owns:
//   - the decision (decide.go: Decide, Decision): one plain value for
//     every command kind and mode, computed from the command's bytes, the
//     class of its text, the mode and the KILL the client prepared as the
//     statement it names; it sends nothing, waits for nothing and changes
//     no state, so an event loop may ask. Run carries a Decision out;
//   - KILL with users (kill.go): every form mapped to the proxy's
//     sessions, ids by expression evaluated on the backend, the permission
//     check (mayKill), KILL QUERY ID and KILL USER;
//   - the prepared KILL (stmt.go: Stmt, the id an execute of KILL ?
//     binds), PREPARE ... FROM a KILL replaced by a stand-in (dynamic.go)
//     and KILLs inside a multi-statement text, mapped in place (multi.go);
//   - KILL in backend-account mode (relay.go): relayed untouched, an idle
//     target's client closed once the backend accepts it, and the 1927
//     that marks a session's backend connection as about to end;
//   - a session's KILL state beyond one command (state.go: State).
//
// What it may call: the standard library, go-mysql for constants and
// *mysql.MyError, internal/killsql, internal/sqltext (a text's class) and
// proxy/wire (a COM_STMT_EXECUTE's parameters, IOError). Never package
// proxy, which imports it: what it needs of a session and of the server
// is the interfaces of session.go (Session, the session the KILL runs on,
// with its relays and its statements of KILL's own on the backend;
// Target, a session a KILL may name; Registry, the server's sessions),
// which package proxy implements in proxy/killglue.go. Nothing here runs
// per command but Decide, a plain function: a Session is handed over only
// for a command that is a KILL.
//
// # Connection ids and KILL
//
// In backend-account mode (no users) each session is greeted with its
// backend connection's thread id, so the greeting, CONNECTION_ID() and the
// processlist agree as directly, and every KILL (any form, also in a
// multi-statement text, PREPARE ... FROM, EXECUTE IMMEDIATE) is relayed
// untouched: the session is logged in as the client's own account and the
// backend's privileges decide. A killed session's client loses its
// connection: closed at once when idle and named by a lone KILL n or
// COM_PROCESS_KILL the backend accepted, after a 1927 once the backend
// connection ends, else when the proxy sees it end (relay.go). The rest
// of this section is about sessions of configured users, which share
// backend accounts.
//
// With users each session is greeted with a proxy id (from 2^30 up, so it
// never equals a backend thread id). `KILL [HARD|SOFT] [CONNECTION|QUERY] n` and
// COM_PROCESS_KILL are carried out by the proxy: n may be a proxy id (what
// the mariadb CLI's Ctrl-C, Connector/J's cancel(), PyMySQL and mysql2 use)
// or the backend thread id of one of this proxy's sessions (what
// CONNECTION_ID() returns); the KILL goes to that session's backend thread
// only when the session belongs to the same proxy user, the caller's
// account is admin, or the two sessions use different backend accounts
// (the backend's privileges then decide, 1095 as directly). Any other id
// gets 1094 Unknown thread id: a KILL
// through the proxy never reaches a thread the proxy did not open. An id
// written as an expression (KILL CONNECTION_ID(), KILL @id) is evaluated by
// the session's backend first, then mapped (kill.go); KILL QUERY ID n is
// relayed when the backend's processlist shows query n running in one of
// the caller's sessions, else 1957; KILL USER u kills u's threads that run
// the caller's sessions, one KILL each. A KILL n inside a multi-statement
// text is mapped in place (multi.go): n becomes the target's thread id,
// or the statement a SIGNAL of the server's 1094 when the caller may not
// reach it; one whose id is an expression (but CONNECTION_ID()), QUERY ID
// or USER gets 1235 for the whole text (from a client without
// multi-statements the server itself rejects what follows a ';'). A KILL prepared with the
// binary protocol (COM_STMT_PREPARE of `KILL n` or `KILL ?`) is carried
// out the same way at every execute, with the id the execute binds
// (stmt.go); the backend holds the prepared statement, but none of its
// executes reaches it. A KILL in the literal text of `PREPARE s FROM '...'`
// or `EXECUTE IMMEDIATE '...'` (string or hex literals, concatenated) gets
// 1235. What the proxy cannot see reaches the backend as written: `PREPARE
// s FROM @var`, KILL in stored routines, events and triggers; give proxy
// users that must not kill each other different backend accounts.
//
// Whether a command is a KILL the proxy acts on, and which of the ways
// above carries it out, is decided in one place, Decide (decide.go),
// which sends nothing and waits for nothing; Run hands the command to the
// file of its way.
package kill
