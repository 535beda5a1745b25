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
//
// # Limits on hostile input (the front door and after)
//
// Asserted by proxy/frontdoor_test.go and proxy/wire/handshake_fuzz_test.go:
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
//     no answer, then waits in its socket (tested, proxy/pushback_test.go: with
//     48 MiB sent to a stopped backend the heap grows less than 16 MiB).
//   - A client aborting TLS, or any other failed handshake, costs one log
//     line without a stack trace.
package frontdoor
