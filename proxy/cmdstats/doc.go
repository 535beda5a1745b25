// Package cmdstats is the statement path's metrics: what a session counts
// of its commands (by kind: Kind, Names), of the ERR packets its client
// receives (by code, the first SessionErrCodes codes in the session's own
// table) and how long its relayed commands take (a histogram), and their
// sum, CommandStats, which a scrape reads.
//
// A Session is written only by whoever serves the session (its goroutine
// or the loop runner holding it) with plain stores and read by scrapes
// atomically: no shared word is written per command, nothing is looked up
// by label, nothing allocates. Its methods are small enough to inline in
// package proxy's command path.
//
// What it may call: the standard library, go-mysql (constants) and
// internal/metric. Never package proxy, which keeps the server's totals
// (ended sessions, refused logins, codes beyond a session's table), adds
// up the live sessions under its lock (Server.CommandStats, stats.go) and
// keeps its exported names (CommandStats, CmdQuery..., CmdNames) as
// aliases of these.
package cmdstats
