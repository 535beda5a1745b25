// Package login is how a client logs in to leafproxy, as far as that needs
// no session and no backend connection of the proxy's: the greeting and
// the capabilities it offers, the client's handshake response (TLS
// included), the check of its credentials against the proxy's accounts,
// the failed-login throttle, and the relay of an authentication exchange
// between a client and a backend connection (backend-account mode and
// COM_CHANGE_USER). Package proxy runs the login (server.go, handshake.go,
// passthrough.go, auth_changeuser.go; proxy/frontdoor greets from the
// accept loop) and turns its result into a session; the backend side of a
// login (dialing, the backend leg's handshake) is package proxy/backend's.
//
// What it owns:
//   - the capability sets (caps.go): ProxyCaps and ProxyExtCaps, what the
//     greeting offers of the backend's (less what the relay cannot carry:
//     DEPRECATE_EOF, MySQL 8's QUERY_ATTRIBUTES / OPTIONAL_RESULTSET_METADATA
//     / ZSTD, MariaDB's PROGRESS, COM_MULTI, CACHE_METADATA and
//     BULK_UNIT_RESULTS), MirroredCaps, the client's flags its backend
//     session shares, and BackendBaseCaps, what the backend leg always asks;
//   - the backend's greeting as last seen, and the one probe login that
//     learns it when none has been (Greetings; the login itself is
//     proxy's, handed in as a function);
//   - the greeting (Greeting: the backend's, with the proxy's session id,
//     a fresh scramble and the proxy's plugin) and the client's handshake
//     response (GreetClient: read within PreAuthMaxPacket, upgraded to TLS
//     when asked, tls.required enforced), Error (what a refused login is
//     told, WriteError);
//   - the credential check (Checker.Authenticate: mysql_native_password
//     and caching_sha2_password against a password in clear, native
//     against a password hash, a plugin switch when the client's cannot be
//     checked, unknown users costing the same as known ones and getting the
//     same 1045); the accounts themselves are package proxy's, seen through
//     the Accounts interface;
//   - the failed-login throttle (throttle.go: Throttle, a token bucket per
//     client host, HostKey, HostBlocked's 1129, Checker.CountFailure),
//     bounded to ThrottleHosts hosts;
//   - the handshake admission budgets (pending.go: Pending, connections
//     not logged in yet by client host, oldest first; when full the oldest
//     of the host holding the most is closed), and what the accept loop
//     needs to greet a connection before it has a goroutine (silent*.go:
//     WriteGreeting, SilentBudget, limits.max_silent_handshakes bounded by
//     the open-file limit, SilentTimeout, a silent connection's spread
//     deadline);
//   - TLS set-up (tls.go: the client-facing certificate, self-signed when
//     none is configured; the backend leg's configuration);
//   - the relayed authentication (relayauth.go: RelayAuth carries auth
//     switches and extra auth data between a client leg and a backend leg
//     until the backend's OK or ERR, including caching_sha2_password's full
//     authentication when only one leg is TLS; CurrentUser, the admin
//     check's query);
//   - COM_CHANGE_USER's relayed exchange (changeuser.go: RelayChangeUser,
//     with the throttle's check and count; IsAccount, the admin check's
//     answer; Admins and IsAdmin, the admins list of backend-account
//     mode; MaxChangeUserFailures); the session's side (its state, the
//     backend connection swapped, the reset after a refusal) is package
//     proxy's;
//   - the login counters (Stats: the throttle's with the server's,
//     proxy.LoginStats).
//
// # Looking like the backend
//
// The greeting is the backend's own: its version string, status flags
// (autocommit: PyMySQL derives its autocommit default from them), charset,
// and its capability flags less what the relay cannot carry. It is learned
// from a probe login at the first client and refreshed from every backend
// login, so a restarted or upgraded backend shows through. Capabilities the
// proxy honours on both legs: FOUND_ROWS, MULTI_STATEMENTS, MULTI_RESULTS,
// PS_MULTI_RESULTS, SESSION_TRACK, CONNECT_ATTRS (the client's own attributes
// are forwarded, with _proxy=leafproxy added), LOCAL_FILES (the file request
// and the client's file are relayed; an interceptor may have the file pass
// through an InfileTransformer, proxy/infile.go), IGNORE_SPACE,
// INTERACTIVE, and MariaDB's STMT_BULK_OPERATIONS and EXTENDED_TYPE_INFO
// (the proxy's own result sets are written in the negotiated format).
// COMPRESS and SSL are per leg: the proxy speaks them with the client and
// separately with the backend (backend.tls; the backend leg compresses
// when its client's does, proxy/wire/compress.go). Not advertised, because the
// relay's response walker would misread them: DEPRECATE_EOF, MySQL 8's
// QUERY_ATTRIBUTES / OPTIONAL_RESULTSET_METADATA / ZSTD, MariaDB's
// PROGRESS, COM_MULTI, CACHE_METADATA and BULK_UNIT_RESULTS. Clients work
// without them, as with a server that lacks them.
//
// With users configured, the backend login happens after the client has
// authenticated and before it is told so: the client gets the backend's own login OK (status flags,
// session state), or its ERR (1045, 1049 unknown database, ...), or 1429
// naming the backend address when it cannot be reached. When no greeting can
// be learned at all, the client gets that 1429 in place of a greeting.
// Without users (backend-account mode) the backend connection comes first:
// the client is greeted with its thread id, scramble and plugin, and the
// exchange is relayed until the backend's OK or ERR (backend.PassThrough).
//
// # COM_CHANGE_USER
//
// With backend accounts (no users) the command is relayed to the session's
// backend connection, auth switches included (RelayChangeUser; proxy/auth_changeuser.go applies the result to the session). With
// users, the new account is checked against them with the greeting's
// scramble (switching plugin when needed); the backend session is then
// replaced by a fresh login as that account's backend user, which resets
// session state as the server's own change user does (variables, temporary
// tables, prepared statements). A refused change user answers the error and
// keeps the connection, reset, as the old user, as MariaDB does; after
// three refusals (MaxChangeUserFailures) the command is answered 1047.
//
// What it may call: package proxy/wire for the protocol's bytes, go-mysql
// for constants and scrambles, the TiDB parser's collation table,
// golang.org/x/sys/unix (the open-file limit, the greeting's write), the
// standard library. Not package proxy (internal/layering's test holds it
// so): what it needs of the server comes in as values (Checker, the TLS
// configurations, an Exchange, the probe login as a function) and the
// Accounts interface, which proxy's
// account set implements (proxy/loginglue.go). Nothing here runs per
// command: a logged-in session's relay never calls into it.
package login
