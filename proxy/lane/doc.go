// Package lane is a session of leafproxy while the event loop serves it
// (Linux only; docs/eventloop.md): its two non-blocking sockets, the
// commands its client sends, run as they complete, and their responses,
// relayed to the client as they arrive, packet by packet, followed with
// the response state machine (wire.RespTracker). The loop's engine, which
// watches the sockets and calls a lane when something happens on them, is
// package proxy/eventloop; the session itself, what a command does and
// how a session moves onto a loop and back, is package proxy's.
//
// What it owns:
//   - the lane (lane_linux.go: Lane): reading the client, splitting what it
//     sent into commands and running them one at a time (Session.Command),
//     back pressure both ways, the idle and drain checks, handing the
//     session back to its goroutine (HandBack: a command that would wait,
//     a command larger than the loop reads, the backend speaking unasked,
//     LOCAL INFILE, a watcher's verdict to carry out) and tearing it down;
//   - the backend side (relay_linux.go): the response read and relayed as
//     it arrives, renumbered for the client leg in place, the first packet
//     of a RelayQueryOr answer shown to its watcher (Session.Judge) and an
//     OK relayed with the insert id it reports, the end of the response;
//   - what the sockets did not take yet (pend_linux.go: sink, drainPend,
//     backendFull);
//   - the engine's calls (handler_linux.go: eventloop.Handler);
//   - the legs a session's goroutine takes back (legs_linux.go: LegOver,
//     PrefixRW, over the lane's sockets with what it read ahead).
//
// What it may call: the standard library, golang.org/x/sys/unix,
// proxy/eventloop (the engine, its runners' buffers and writers, the
// loop's socket I/O) and proxy/wire (legs, packets, RespTracker). Never
// package proxy, which imports it: what a lane needs of its session is
// Session (session_linux.go), implemented by proxy's laneSession
// (proxy/laneglue_linux.go), which is also the session's commandExec while
// the loop serves it; plain values and the session's atomics come in
// Config. A command on the loop calls Session twice, Command and
// Finished, where it used to call the session directly (also RelayedErr
// for an ERR, Judge for a watched answer's first OK or ERR); the relay of
// the response's bytes calls nothing.
package lane
