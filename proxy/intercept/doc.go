// Package intercept is what a session offers an interceptor (the engine)
// besides relaying its commands: statements the proxy runs on the
// session's backend connection for the interceptor, prepares with
// parameters the client does not see, the answers the proxy writes to the
// client itself, and a LOCAL INFILE file streamed through the
// interceptor's transformer. Relaying, the response walker and the
// session's state are package proxy's; the bytes are package proxy/wire's.
//
// What it owns:
//   - statements of the interceptor's own on the backend connection
//     (backendstmt.go: BackendQuery, information_schema lookups with the
//     first result set's rows as text; BackendExec; BackendPrepare and
//     BackendCloseStmt; ExecuteResult, an execute whose answer the
//     interceptor turns into its own): nothing reaches the client, a
//     backend ERR comes back as a *mysql.MyError and leaves the session
//     usable, an I/O or protocol failure ends it;
//   - statements with parameters the client does not know about
//     (hidden.go: RelayPrepareHidden, ParamCountError): an interceptor may
//     prepare a text with extra ? markers (generated values it binds itself
//     at every execute); the client gets the prepare OK with the count
//     lowered and without their definitions;
//   - the result sets the proxy writes itself (resultsets.go: Client, the
//     session's client side; WriteOK, BIGINT results for NEXTVAL, typed
//     rows in the text or binary protocol, the VARCHAR results of the
//     proxy's SHOW statements), every packet built in the session's
//     reusable buffer, so a NEXTVAL answer costs no allocation;
//   - a LOCAL INFILE file through an InfileTransformer (infile.go:
//     RelayFile), re-framed in packets of at most 64 KiB;
//   - two relays that are more than a command and its response
//     (relay.go): RelayExecuteAfter, a SET pipelined before an execute
//     (the session ends when the SET fails: the execute ran with stale
//     values), and RelayQueryWriter, a text written in pieces straight
//     into the backend connection (a large rewritten INSERT is never held
//     whole).
//
// What it may call: the standard library, go-mysql for constants and
// *mysql.MyError, and proxy/wire (legs, packet builders, the response
// kinds, typed rows). Never package proxy, which imports it: what it needs
// of a session is the interface Session (session.go: the legs, the
// reusable buffers, the fatal error, the response walker's read of a whole
// response, its relay of one packet or of a whole response), implemented in proxy/interceptglue.go
// by the session through a named type, so that none of its methods is on
// *proxy.Session. The Session methods the engine calls (WriteOK,
// BlockingSession's BackendQuery, ...) stay there as one-line calls into
// this package.
package intercept
