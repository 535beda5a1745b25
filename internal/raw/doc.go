// Package raw holds the module's only uses of unsafe, each behind a small
// function whose contract says what the caller must guarantee:
//
//   - Read, Write and EpollWait (Linux): raw system calls on non-blocking
//     descriptors, for the proxy's event loop and socket legs, which take
//     the buffer's address (fd_linux.go says why raw).
//   - String: a string that shares a byte slice's memory, so the engine
//     can plan a statement straight from the client's packet buffer
//     without copying it.
//
// No other package imports unsafe (internal/layering's test keeps it so).
package raw
