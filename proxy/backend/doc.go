// Package backend is leafproxy's side of a backend connection until it is
// logged in: dialing backend.addr (TCP, or a Unix socket path), reading
// and checking the backend's greeting, the backend leg's handshake
// response (the proxy's capability flags plus the client's mirrored ones,
// the client's attributes marked _proxy=leafproxy), TLS to the backend
// (backend.tls), the compressed protocol on the backend leg when the
// client asked for it on its own, and the backend's authentication
// exchange (mysql_native_password, caching_sha2_password with its RSA
// public key exchange off TLS, client_ed25519, auth switches). Package
// proxy turns the logged-in connection into a session's pinned backend
// connection.
//
// What it owns:
//   - Dialer.Connect (conn.go): a login with the proxy's or an account's
//     backend credentials (Login), within backend.connect_timeout, giving
//     a Conn (the connection, the backend's greeting and login OK, thread
//     id, whether it compresses); TLSError;
//   - the backend's reachability (reach.go: Reach, noted after every
//     connect and health probe, logged once when the backend stops
//     answering and once when it answers again; Outcome, what a connect's
//     error says of it: a refusal is an answer);
//   - backend-account mode's backend side (passthrough.go): Dialer.Open
//     reads a fresh connection's greeting for the client to be greeted
//     with (its thread id, scramble and plugin), Pending.Authenticate
//     passes the client's handshake response on and relays the exchange
//     (login.RelayAuth) to the backend's OK or ERR, and Pending.Retire logs
//     a connection whose client never answered in as the proxy's account
//     and quits, so the backend's max_connect_errors does not count an
//     aborted handshake against the proxy's host; Quit;
//   - what a client is told when the backend login fails (refusal.go:
//     Refusal, the backend's own ERR or 1429 naming backend.addr,
//     ErrUnreachable; AuthFailure, a relayed login's failure, a refused
//     password counting against the client's host) and the admin check's
//     confirmation (ConfirmAdmin: CURRENT_USER() names the very account).
//   - backend-account mode's whole login (PassThrough.Login: the dial, the
//     client greeted through the server's callback, the throttle's check,
//     the relayed exchange, the admin check), and ClientLogin, the backend
//     login of a client the proxy authenticated.
//
// Backend-account mode (no users configured): the backend authenticates
// every client with its own accounts, and the proxy holds no password.
//
// For each new client the proxy opens a backend connection first and greets
// the client with that connection's scramble and default plugin (the rest
// of the greeting mirrors the backend as always). The client's handshake
// response is passed on with the client's user, auth data, database,
// attributes (plus the proxy's mark) and plugin, and with the capability
// flags the proxy needs on the backend leg (Pending: protocol 4.1,
// its own TLS, compression when the client asked for it). Auth switches and extra auth data are then
// relayed both ways until the backend says OK or ERR; the client gets that
// answer. The connection that authenticated becomes the session's pinned
// backend connection: there is no second login. A client's TLS ends at the
// proxy; the backend leg's TLS is backend.tls's (see login.RelayAuth for the one
// place where the two differ: caching_sha2_password's full authentication).
//
// Admin rights are never implied: a session is an admin only when the user
// name it logged in with is listed in admins and the backend confirms, with
// CURRENT_USER(), that it authenticated that very account (not an
// anonymous account that accepts any name).
//
// What it may call: package proxy/login (capability sets, the relayed
// exchange, the failed-login count, Error), package proxy/wire for the
// protocol's bytes, go-mysql for constants and scrambles, the standard
// library, internal/edge (Reach's once-per-change). Not package proxy (internal/layering's test holds it so): what
// it needs of the server comes in as values (Dialer: backend.addr,
// backend.connect_timeout, backend.tls's configuration; login.Checker for
// the failed-login count; PassThrough's settings and its three callbacks:
// Noted, Greet, Admin) and what it finds goes back as return values
// (package proxy notes reachability and the greeting, proxy/backendglue.go).
// Nothing here runs per command: logins and COM_CHANGE_USER only.
package backend
