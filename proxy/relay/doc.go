// Package relay is the response relay of a leafproxy session on its own
// goroutine (LEAFPROXY_LOOP=0, and every command an event loop hands back)
// and the verdicts of an interceptor's AnswerWatcher on an answer's first
// packet, which the event loop (proxy/lane, through package proxy's
// laneglue_linux.go) and the goroutine both take.
//
// What it owns:
//   - the walker (walk.go: Walker, Walk, Packet): one response followed
//     with the one response state machine (wire.RespTracker), each packet
//     streamed to the client renumbered for the client leg (Relay) without
//     holding more than its first wire.HeadLen bytes, or read whole and
//     dropped (Discard) or kept as text rows (Collect) for a statement of
//     the proxy's own; the insert id override of a response's first OK
//     (RelayQueryInsertID, RelayQueryInsertIDs, an OKVerdict); a LOCAL
//     INFILE file streamed to the backend as it comes (LocalFile); text
//     rows (TextRow) and the backend's protocol errors (ProtocolError);
//   - the answer watch (answer.go): AnswerWatcher, ErrVerdict, OKVerdict,
//     BaseAnswerWatcher and RetryOnly (package proxy re-exports the first
//     four), the look at an answer's first packet (PeekFirst, under
//     MaxWatchedErr) and the watcher's verdict on it (Judge, JudgeNext: a
//     Verdict, whose Act says what the relay does), taken on either side;
//   - the verdict carried out on the session's goroutine (settle.go:
//     Walker.Settle): the ERR dropped for a retry, the restoring statement
//     run and its answer dropped before the ERR or the OK with insert id 0
//     is written, a reported insert id set for the walk. What follows
//     (Redo, the flush, the session's view of the backend) is package
//     proxy's (retry.go's settleFirst).
//
// The walker is a value the session makes for each walk over its own
// fields (package proxy's relayglue.go: its legs, buffers and insert id
// override); it calls the session through Session only on an ERR relayed
// and a LOCAL INFILE, and tells the tracker's observer
// (wire.RespObserver) what the response says about the backend session.
// Nothing is allocated per command.
//
// What it may call: the standard library, go-mysql's mysql package (the
// MyError of an ERR) and proxy/wire (legs, packets, RespTracker). Never
// package proxy, which imports it.
//
// # How a response is relayed
//
// Each session has two legs (client, backend), each with its own buffered
// reader/writer and its own sequence ids. Responses are relayed packet by
// packet, renumbered for the client leg, following the one response state
// machine, proxy/wire's RespTracker (fed by proxy/relay's walker on a session's
// goroutine and by the lane on an event loop): OK | ERR | LOCAL INFILE |
// column count -> definitions -> EOF -> rows -> EOF/ERR, repeated while
// SERVER_MORE_RESULTS_EXISTS; prepare: OK -> params+EOF -> columns+EOF;
// STMT_CLOSE and SEND_LONG_DATA: none. The same walker consumes the
// responses to proxy-originated statements. The client writer is flushed
// once per response. Only the first 32 bytes of a relayed packet are looked
// at; nothing is held per row, packets of 16 MB and more are streamed in
// their physical pieces. Prepared statements are the backend's own:
// statement ids pass through unchanged; MariaDB's id 0xFFFFFFFF ("the
// statement prepared last") is resolved before an interceptor sees it.
package relay
