// Package wire is the MySQL/MariaDB client/server protocol's bytes, as
// leafproxy reads and writes them on both legs of a session; it knows
// nothing of sessions, backends, SQL or interceptors (package proxy's).
//
// What it owns:
//   - packet framing over a buffered connection: Leg, one side of a
//     session with its own reader, writer and sequence id (ReadHeader,
//     ReadPacket, WritePacket, WriteCommand, FlushForResponse, CopyTo,
//     the pieces the relay streams, and the park/unpark of idle buffers;
//     packet.go), SequenceError and IOError (any IOError ends a session),
//     BufferedConn (bytes read ahead kept across a TLS upgrade), and
//     CommandWriter (a command of known length framed as it is written,
//     commandwriter.go);
//   - the raw socket I/O under a plain TCP or Unix leg (rawio.go,
//     sockio_*.go): reads and writes with raw system calls inside
//     syscall.RawConn's callbacks, a command held back until the read of
//     its answer (LEAFPROXY_RAWIO=0 and LEAFPROXY_RAWIO_HOLD=0 turn these
//     off), and SocketPeeker, a look at an idle socket that reads nothing;
//   - compression frames (CLIENT_COMPRESS, compress.go: CompConn);
//   - packet classifiers and builders (IsOK, IsErr, IsEOF, OKInfo,
//     ParseErr, ErrPacket, OKPacket, Lenenc, WriteHeader; packet.go);
//   - the greeting and the handshake response (greeting.go: Greeting,
//     HandshakeResponse, their parsers and writers, AttrsWith, MariaDB's
//     extended capability bits); which capabilities the proxy offers is
//     policy, and is package proxy/login's (caps.go);
//   - the response state machine (tracker.go: RespTracker, the kinds of
//     response Resp*, what a packet was Ev*): where a response ends, what
//     its OK said, a prepare's statement id; it tells the session's status
//     flags and prepared statement through RespObserver. Both ways package
//     proxy relays a response (a session's goroutine, an event loop) feed
//     it, one logical packet at a time;
//   - typed result rows (resultrows.go: Column, Value, the column
//     definitions and text and binary rows MariaDB would send for them);
//   - the module's one decoder of COM_STMT_EXECUTE (stmtexec.go:
//     ParseExecute, Execute, ParamLen, ExecuteFlags), which proxy and
//     engine both use.
//
// What it may call: the standard library, go-mysql for constants (package
// mysql), golang.org/x/sys/unix and internal/raw (the module's one use of
// unsafe) for socket I/O. Nothing else of this module: internal/layering's
// test holds it so. The relay's hot functions (IsOK, IsErr, ReadHeader,
// WriteHeader, ...) are small enough to inline, and Leg is a concrete
// struct: moving them here added no call or indirection to the relay path.
package wire
