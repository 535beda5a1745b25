// Package frontdoor is leafproxy's front door, as far as it needs no
// session: the accept loop and what happens to a connection before its
// handshake has a goroutine, and the admission budgets a connection
// passes on its way to a session. Package proxy's Server owns one Door,
// fills it in (its limits, and pointers to the server's own lock,
// counters and budgets) and runs the rest: the login itself, the backend
// login, the session (proxy/server.go handle, proxy/frontdoorglue.go).
//
// What it owns:
//   - Listen: Config.Listen's host:port or Unix socket path, a stale
//     socket file of a dead process removed first;
//   - the accept loop (door.go: Door.Serve): the graceful shutdown when its
//     context ends (within shutdown.grace), the retry with backoff (5 ms
//     to 1 s) on a timeout or EMFILE/ENFILE, each accepted connection
//     counted as handled and either greeted here or handed to its own
//     goroutine (Server.Start);
//   - the proxy's session ids (NewSessionID, from SessionIDBase up, apart
//     from backend thread ids; wrapped after 3 billion sessions);
//   - the greeting from the accept loop and the doorman (greet_linux.go;
//     Linux with proxy accounts only): the accept loop greets a new client
//     itself and hands its connection to the doorman (eventloop.Doorman,
//     one goroutine polling every greeted connection that has not sent a
//     byte yet); the connection gets its goroutine only when its first
//     bytes (or its hang-up) arrive. Such silent connections have their
//     own budget, limits.max_silent_handshakes (default 16,384, at most
//     half the open-file limit; when full the oldest of the host holding
//     the most is closed), and a deadline of handshake_timeout plus a
//     random part of up to half of it (Waiting, End for login.Pending);
//   - the handshake admission (AdmitHandshake): a blocked host refused
//     with 1129 before any greeting, the budget of handshakes under way
//     (limits.max_handshakes, login.Pending) and their deadline
//     (limits.handshake_timeout); a connection the doorman held moves from
//     the silent budget to that one;
//   - the session admission (AdmitSession): limits.max_connections for
//     logged-in clients, refused with 1040 (the backend connection of
//     backend-account mode sent COM_QUIT and closed).
//
// What it may call: proxy/eventloop (the doorman's poller), proxy/login
// (the budgets, the throttle, WriteGreeting, SilentBudget, Error),
// proxy/sessionend (ComQuit) and proxy/wire; the server only through the
// Server interface (the backend's greeting, a client's greeting, a
// goroutine for a connection, a refusal, Shutdown). It must not import
// package proxy.
package frontdoor
