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
//
// What it may call: package proxy/login (capability sets, the relayed
// exchange, the failed-login count, Error), package proxy/wire for the
// protocol's bytes, go-mysql for constants and scrambles, the standard
// library, internal/edge (Reach's once-per-change). Not package proxy (internal/layering's test holds it so): what
// it needs of the server comes in as values (Dialer: backend.addr,
// backend.connect_timeout, backend.tls's configuration; login.Checker for
// the failed-login count) and what it finds goes back as return values
// (package proxy notes reachability and the greeting, proxy/backendglue.go).
// Nothing here runs per command: logins and COM_CHANGE_USER only.
package backend
