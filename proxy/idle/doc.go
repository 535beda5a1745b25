// Package idle is a logged-in session's life between commands, and the
// memory the proxy's sessions hold:
//
//   - the idle watch of a session on its own goroutine (watch.go): its
//     deadlines, every BackendWatch (500 ms) of client silence, aligned on
//     a WatchGrid so that many idle sessions' timers fire together; the
//     check, without blocking, that the backend has not closed the
//     connection (wait_timeout, KILL, restart) or sent something unasked
//     (BackendGone: an ERR such as 4031 is passed on to the client, which
//     then sees its connection close, so pools discard it instead of
//     getting 1158 on their next statement; BackendClosedError); and the
//     legs' buffers an idle session gives to pools and takes back when a
//     command comes (Pools.Park, Pools.Unpark). On an event loop the epoll
//     instance watches both sockets instead;
//   - returning idle sessions' memory to the operating system (memory.go:
//     Memory, one per server): once a burst of parking has given back
//     enough and has quieted down, two collections and
//     debug.FreeOSMemory, at most every 10 s;
//   - the command memory budget (budget.go: Budget, limits.command_memory),
//     a counting semaphore over the bytes of large client commands, and
//     the one slot for reading a command of 16 MiB or more.
//
// What it may call: the standard library and package proxy/wire (the
// legs). Never package proxy: the session's wait for its next command
// (Session.awaitCommand), its park and unpark, which also drop its
// command buffers, and the pools themselves (legpools.go) stay there
// (idlewatch.go), calling in here with the session's legs.
package idle
