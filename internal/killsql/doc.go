// Package killsql reads KILL statements the way MariaDB does, for a proxy
// that must map the ids they name before any reaches the backend: a KILL
// relayed as written could end a thread of a client that never went
// through the proxy.
//
// It is pure: statement text in, a Req (or a refusal, or a rewritten
// text) out; no network, no session. What it recognises:
//
//   - KILL [HARD|SOFT] [CONNECTION|QUERY [ID]] n, an id written as an
//     expression (for the backend to evaluate: Req.Expr) and KILL ... USER
//     account, in a COM_QUERY of its own (Parse) or prepared with the
//     binary protocol, where the id may be the one parameter, KILL ?
//     (ParsePrepared);
//   - a KILL in the literal text of PREPARE ... FROM or EXECUTE IMMEDIATE
//     (refused, Req.Refuse, or for PREPARE name FROM '<KILL>' on its own
//     replaced by a stand-in, StandIn);
//   - KILLs among the statements of a multi-statement text, mapped in
//     place (MapMulti), the caller saying which ids it may map (Target);
//   - the SQL the proxy sends the backend to carry a KILL out: an id
//     expression's evaluation (EvalID), the processlist look-ups
//     (ThreadOfQuery, ThreadsOfUser), the KILL of a backend thread or
//     query (Req.ThreadStatement, Req.QueryStatement), and KILL USER's
//     account and host pattern (ParseAccount, WildMatch).
//
// Carrying a KILL out (finding the session, checking that the caller may
// kill it, relaying the KILL with the backend thread id, answering the
// client) is package proxy/kill's (kill.go, stmt.go, multi.go).
// What is white space, a comment, a quoted text or a statement end is
// internal/sqltext's, shared with the rest of the proxy.
package killsql
