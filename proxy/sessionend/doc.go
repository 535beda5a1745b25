// Package sessionend is why a logged-in session ends and how its end
// reaches the backend: the backend sees what the client did.
//
//   - The client quits (COM_QUIT), or the proxy closes the session between
//     commands for its own reasons (limits.idle_timeout, shutdown, a
//     malformed command): the proxy sends COM_QUIT (ComQuit, QuitPacket)
//     before it closes the backend connection, so the server counts no
//     Aborted_clients and logs no "Aborted connection" warning.
//   - The client closes its connection without COM_QUIT (a crash, a killed
//     process, a pool that drops sockets; LeftWithoutQuit): the backend
//     connection is closed without it too, and the server counts the
//     abort it would have counted directly.
//   - The client goes away while its command runs on the backend: once the
//     command has run HangupArm (100 ms), the statement is stopped with
//     KILL QUERY <thread> on a side connection (KillQuery, logged in as
//     the session's backend account, which owns the thread) and the
//     backend connection is cut, as the vanished client's own would be;
//     it never runs another command. (Directly, MariaDB notices such a
//     client only when it next writes to it, or every few seconds in
//     SLEEP: a long report query would go on.) On an event loop the lane
//     sees the hang-up (EPOLLRDHUP) while the command is under way; a
//     session on its own goroutine (TLS, compression, commands handed off
//     from a loop) is blocked reading the backend, so a watch (Watch: one
//     goroutine per server, running only while such a command is under
//     way) looks at its client socket every HangupTick.
//   - The backend failed, or the session is cut off mid-command (forced
//     shutdown): the connection is just closed.
//
// What it owns: the session's plan for its backend connection (Close,
// Quit, Abandon), the reading of the error that ends a session and the
// log line that says why (ClientError, CommandError), the hang-up watch's
// loop and KILL QUERY's exchange.
//
// What it may call: the standard library, golang.org/x/sys/unix, go-mysql
// (constants), package proxy/wire (framing) and package proxy/idle (its
// BackendClosedError). Never package proxy: the watch sees the server's
// sessions through Sessions and Session, which package proxy implements
// (hangup.go: hangupSessions, hangupSession, once per tick, never per
// command); the session's methods that carry the end out (finish,
// abandon, abandonSoon, endOnError, endOnClientError: hangup.go,
// sessionendglue.go) stay there, as do the sockets the hang-up watch looks
// at (fdLook, hangup_linux.go) and the side connection's login.
package sessionend
