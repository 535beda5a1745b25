// Package eventloop is the engine of leafproxy's event loop (Linux only;
// docs/eventloop.md): one epoll instance served by several runners,
// ordinary goroutines, which watch the two sockets of every logged-in
// session the loop serves and hand what happened on them to that
// session. It knows nothing of the protocol, sessions or servers: what a
// session does with its sockets' events is package proxy/lane's (its
// lane), behind Handler.
//
// What it owns:
//   - the loop (loop_linux.go: Loop, Runner): the epoll instance, parked
//     on by one runner at a time through Go's netpoller, its batches of
//     edge-triggered events, the inbox of lanes handed over by sessions'
//     goroutines (Post) and their registration, Detach, the drain on
//     shutdown (RequestDrain), the sweep that lets idle lanes be closed
//     (limits.idle_timeout), Close, and the rescue that costs a panicking
//     lane its session, not the loop;
//   - a lane's part that the runners coordinate on (lane_linux.go: Lane;
//     its lock, the pending-event bits Pend*, Gone) and Handler, the calls
//     the loop makes to a lane's session (Serve, Bind, Teardown, Logger);
//   - the lane table (lanetable_linux.go): lanes by slot without a lock,
//     for the runners' look-up of every event;
//   - the doorman (doorman_linux.go: Doorman), the one goroutine that
//     polls, before login, every greeted connection that has not sent a
//     byte yet, and hands it on when its first bytes arrive or gives it up
//     at its deadline; what the server does with those connections (the
//     greeting, the budget of silent connections) is package
//     proxy/frontdoor's;
//   - the loop's socket I/O (fdio_linux.go: ReadFD, WriteFD on
//     non-blocking descriptors, AssertNonblocking), raw system calls that
//     never wait, and the descriptors a session moves with (DupSocket, to
//     the loop; FDConn, back to a net.Conn).
//
// What it may call: the standard library, golang.org/x/sys/unix,
// internal/raw (system calls annotated for the race detector) and
// internal/nonblock (the context mark that tells interceptors not to
// block). Nothing else of this module, and never package proxy:
// internal/layering's test holds it so. A runner calls its lane's
// Handler.Serve each time it handles what is pending on the lane (one
// interface call where there were direct ones); a command, a response and
// each of its packets then run in package proxy's lane with no further
// call into this package but ReadFD (inlined) and WriteFD, as before.
//
// Off Linux the package is empty: every session runs on its own
// goroutine (package proxy's loop_other.go).
package eventloop
