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
//     check's query).
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
