// Package rewriter plans what leafproxy does with a statement text: pass it
// through, answer a sequence SELECT itself, or splice generated IDs into
// the text. It is pure: text, rules and session facts in, a Plan out; it
// does no I/O and draws no IDs.
//
// # Calling it
//
// For every COM_QUERY:
//
//	p, err := rewriter.PlanQuery(sql, &env) // env: session DB, sql_mode, rules
//	switch {
//	case err != nil: // *rewriter.Error: send ERR(Code(), SQLState(), Error()); send nothing to the backend
//	case p.Kind == rewriter.PassThrough: // relay sql unchanged
//	case p.Kind == rewriter.Sequence: // one row: for each p.Calls[i], a BIGINT column named Calls[i].Name
//	    // with NEXTVAL (Func Next; with N > 1 the first of a block of N consecutive IDs, LASTVAL then
//	    // the last), the session's LASTVAL (Func Last, NULL before the first) or SETVAL's value of
//	    // Calls[i].Tag, evaluated left to right; or, for a lone Func Decode, LEAFPROXY_DECODE's row
//	case p.Kind == rewriter.Rewrite:
//	    // for each p.Tags[i]: batches[i] = allocator.NextN(Tags[i].Tag, Tags[i].N) (ascending, consecutive)
//	    ids, _ := p.AssignIDs(ids[:0], batches) // ids[j] belongs to p.Slots[j]
//	    out, err := p.Render(buf[:0], sql, ids) // send out instead of sql (err: a kept plan, a caller's bug)
//	}
//
// The session should remember, per tag, the last ID it handed out (also
// IDs spliced into statements) for LASTVAL.
//
// For COM_STMT_PREPARE call PlanPrepare and prepare p.Render(nil, sql, nil)
// on the backend instead of sql. Its IDs are extra ? parameters, one per
// slot: the backend statement has p.Params parameters, the client's
// p.ClientParams markers (found with the lexer: quoted and commented ones
// do not count) and the generated ones merged in text order, and
// Slots[i].Param is slot i's index among them. Before every EXECUTE of a
// Rewrite plan draw fresh IDs as above and bind ids[i] as parameter
// Slots[i].Param (a BIGINT), the client's values at the other indexes in
// order. A plan whose Params != ClientParams+len(Slots) must not be used.
// Once prepared, keep p.Keep(): what an EXECUTE reads, without what only
// Render needs (Size says what it holds, for a budget of kept plans);
// Render of the kept plan returns an error.
//
// A many-row INSERT into a rule table (over 64 KiB) planned with a
// Planner is charged RowCost a row to Env.Limits.Memory before it is
// planned, held until Planner.Release (or the Planner's next call): call
// it once the rendered text was sent.
// A Sequence plan from PlanPrepare is answered by the proxy at each
// EXECUTE; a call whose ArgParam is k takes its block size or ID from the
// k-th parameter of each EXECUTE (check a block size with CheckBlock).
//
// The zero Plan is PassThrough, and a Plan is tied to the exact text it
// was made from. Plans are read-only once returned and safe to share.
//
// # What it recognises
//
// What kind of text it is comes from its class, internal/sqltext.Classify,
// made once per command by the proxy and handed in (MayRewrite,
// NeedsSession, Planner.PlanQuery, PlanPrepareClass; the package functions
// PlanQuery and PlanPrepare classify the text themselves). The filter in
// front (exported as MayRewrite, independent of the sql_mode) reads only
// the class: a text in which
// no statement starts with INSERT, REPLACE, LOAD, PREPARE, EXECUTE or SET
// STATEMENT and no sequence call can appear (a "val" that ends NEXTVAL /
// LASTVAL or starts the word VALUE followed by FOR; VALUES does not count)
// is passed through unread. A text without such a call whose statements
// are all INSERT / REPLACE / LOAD DATA / LOAD XML into tables without a
// rule (or LOAD INDEX) is read only up to each table name (statement
// starts taken at every ';' byte; anything else, or an executable comment
// in the text, is lexed). NeedsSession asks the same before the caller
// learns the session's database and sql_mode (which takes statements in
// the client's session): false when the plan is PassThrough whatever they
// are (no sequence call, no PREPARE / EXECUTE of a literal, and, with
// rules, only such INSERT / REPLACE / LOAD statements, tables looked up in
// every database and read under every sql_mode; also inside SET STATEMENT
// ... FOR). Otherwise a quote- and
// comment-aware lexer (honouring ANSI_QUOTES and NO_BACKSLASH_ESCAPES; its
// tokens and literal values are internal/sqltext's NextToken and Unquote,
// the module's one tokenizer and decoder)
// splits the text into statements at ';' and finds sequence calls:
// NEXTVAL(x), NEXTVAL(x, n), LASTVAL(x), NEXT VALUE FOR x, PREVIOUS VALUE
// FOR x, SETVAL(x, n, ...), LEAFPROXY_DECODE(x, id), where x is a string,
// an identifier (backquoted or, under ANSI_QUOTES, double-quoted) or a
// qualified name of which only the last part is the tag. (The filter also
// lets every text with the word LEAFPROXY_DECODE through.)
//
// A text that is exactly `SELECT call [[AS] alias], ... [FROM DUAL] [;]` is
// a Sequence plan, recognised without the parser. NEXTVAL(x, n), a block
// of n consecutive IDs, takes n as an integer literal from 1 to MaxBlock
// or (PlanPrepare) a ?; anything else is error 1210. LEAFPROXY_DECODE(x,
// id) must be the select's only item, without an alias (1235 otherwise);
// its id is an integer, a string holding one, or (PlanPrepare) a ?.
//
// An INSERT / REPLACE into a rule table of the common ORM shape,
// `INSERT [IGNORE] [INTO] [db.]t (col, ...) VALUES|VALUE (...), ...
// [ON DUPLICATE KEY UPDATE ...] [RETURNING ...]` (REPLACE without ON
// DUPLICATE KEY UPDATE), with no sequence call and no executable comment in
// the text, whose key column is absent or in every row a single token
// (number, string, NULL, TRUE / FALSE, DEFAULT, or ? when preparing), is
// planned by the lexer alone (the fast path, fast.go): rows and values are
// delimited by parenthesis depth and top-level commas; the edits are
// exactly those of the parser path. It declines anything else (see
// fast.go), and the statement is parsed as below.
//
// Other statements with sequence calls and INSERT / REPLACE into rule tables
// are parsed, one at a time, by the TiDB parser with the session's sql_mode.
// The parser rejects NEXTVAL('x'), so it reads a copy in which every call
// is replaced by a same-length literal `1` padded with spaces; all offsets
// stay valid. The output is always the original text with edits spliced in
// at known offsets: comments, hints, introducers, escapes and binary
// literals reach the backend byte for byte (the parser's Restore is never
// used).
//
// What planning may cost is bounded (parse.go, Env.Limits): before the
// parser reads a statement the lexer counts its tokens and its nesting of
// parentheses (allocation-free); nesting deeper than Limits.MaxDepth
// (default 1000) is error 1473, and TokenCost (512 bytes) per token is
// reserved from Limits.Memory, a budget all sessions share, until the text
// is planned; so is CallCost (2 KiB) per sequence call of a text with more
// than 64, before they are read. A parser that read more than 1,024 tokens
// is not pooled: it would keep the statement's tree. The lexer-only paths
// above have no other such costs and no other limits.
//
// # Sequence calls in other statements
//
// NEXTVAL becomes one fresh ID per occurrence where it is evaluated once:
// in INSERT / REPLACE VALUES rows and SET lists, in ON DUPLICATE KEY UPDATE
// of a one-row INSERT, in SET @v = ..., and in the select list of a SELECT
// without FROM / WHERE / GROUP BY / HAVING (where an item holding a call
// and no alias is aliased with its own text, `+"`"+`NEXTVAL('t') + 1`+"`"+`,
// the column name MariaDB gives it, which the spliced number would
// change). In UPDATE ...
// SET and in the select lists of INSERT ... SELECT it takes one value per
// row: a Numbered plan (numbered.go). Anywhere else (a SELECT over a table,
// a subquery, WHERE, DELETE) it is an error (1235): one spliced value would
// repeat for many rows. LASTVAL is only answered in a Sequence plan;
// elsewhere it is error 1235, as are a block NEXTVAL(x, n) (one block
// cannot be one value per row) and LEAFPROXY_DECODE. A tag passed as a
// parameter, NEXTVAL(?), is error 1235. Calls in CREATE / ALTER statements (a column's DEFAULT
// NEXTVAL(s)) name MariaDB's own sequences and pass through. How each call
// names its sequence (a string, or an identifier that may be a native
// SEQUENCE) is in Call.Ident / Plan.Idents (SequenceNames reads it from a
// text the planner refused): the engine relays a text whose calls all name
// native sequences.
//
// # Filling keys
//
// For INSERT / REPLACE (IGNORE, ON DUPLICATE KEY UPDATE, VALUE / VALUES,
// SET) into a rule table (names resolved against Env.DB and matched as
// Rules says: exact names, then patterns; case as the backend compares)
// the key is filled when it is absent (the column is added first in the
// column list, or a SET item first in the SET list, or `(col)` before
// VALUES () rows), or its value is where AUTO_INCREMENT would generate
// one: NULL, or, unless NO_AUTO_VALUE_ON_ZERO, DEFAULT (DEFAULT(key)) and
// a literal that stores as 0 in an integer column, as KeyValue converts
// it ('00', 0.4, -0, 0x00, b'0', 0.5e0; 'abc' and the empty string only where the
// conversion is not an error: without Mode.Strict, or with IGNORE).
// Other literals are explicit and kept (the tag moves past them: Explicit
// and Advances). An expression (0+0, (0), @v, CAST(...)) is error 1235:
// the proxy cannot tell which key it stores. A character set introducer
// (_binary 'x', with or without a space; _utf8mb4 0x41) makes a string
// literal. Where Env.TableKey says the key column is not an integer column
// (VARCHAR, BINARY), every value given, literal, expression or a prepared
// ?, is kept as written; only NULL, DEFAULT or an absent key is filled
// (which the engine refuses for the column's type). A NEXTVAL in the key column
// is that row's key. Without a column list the table's
// columns come from Env.Columns; rows whose value count differs from the
// column count are error 1136 (21S01, "Column count doesn't match value
// count at row N"), never passed through unfilled.
// INSERT ... SELECT is a Numbered plan (numbered.go): without the key in
// its column list every row gets one; with it (or without a column list)
// the rows whose key is NULL (or 0) do, and the largest explicit one is
// counted for the tag to move past. Explicit integer keys of VALUES and SET
// rows are reported in Plan.Explicit (those written before every generated
// key of their tag) and Plan.Advances (those after one, in text order, so
// that the rows before them keep keys below them, as with AUTO_INCREMENT).
//
// With Env.ReportKeys (the engine's setting) a Rewrite plan of one
// statement (Plan.ReportsKey) renders its keys as plain values: the engine
// reports the first in the OK packet and keeps it as the session's
// LAST_INSERT_ID() (engine/lastid.go), so the statement's own reads of
// LAST_INSERT_ID() see the value from before it, as with AUTO_INCREMENT;
// only a marked next row (below) keeps a trace, (@__leaf_k:=id) and
// 0*(@__leaf_m:=@__leaf_k)+ (RestorePlain). What follows describes the
// other plans: a text of several statements, and plans made without
// ReportKeys.
//
// In each statement the first generated key (first row's) is rendered as
// LAST_INSERT_ID(id) so that the server reports it in the OK packet's
// insert id and in LAST_INSERT_ID(), as for AUTO_INCREMENT; written
// LAST_INSERT_ID(0*(@__leaf_l:=LAST_INSERT_ID())+id), it keeps the value it
// replaces for the engine to put back after an ERR (lastid.go, WrapLast).
// When that key is not in the last row and the next row has a key (not
// one 0 or below kept), a generated one opens with 0*(@__leaf_m:=LAST_INSERT_ID())+ (a
// client's ? or a positive explicit key in IF((@__leaf_m:=...) IS
// NULL,NULL,...), its type kept):
// the server reads a row only after it wrote the row before, so after an
// ERR @__leaf_m tells whether the wrapped key's row was written
// (WrapMarked, RestoreLastInsertIDAfterError).
// Caveats: a real AUTO_INCREMENT column on the same table wins; with ON DUPLICATE KEY
// UPDATE or INSERT IGNORE that wrote some row the reported ID is the
// generated one even when its row was not inserted (one that wrote
// nothing reports 0: the engine's proxy.AnswerWatcher's OnOK).
//
// Prepared statements: a ? in the key column renders as COALESCE(?,?),
// the wrapped one as COALESCE(?,LAST_INSERT_ID(?)) (the client's marker
// first, Slot.Bound set). The engine decides at each EXECUTE, from the
// value bound and the sql_mode then, as for a literal: it sends either
// the client's value as NULL and a generated key, or the client's value
// and NULL (no ID drawn; COALESCE then never evaluates LAST_INSERT_ID).
//
// Executable comments: `/*!` and `/*!NNNNN` with a version below 50700
// are run by every server and lexed as code. Whether the server runs
// `/*!NNNNN` from 50700 (MariaDB never, MySQL up to its version),
// `/*!MMmmpp` (6 digits), any `/*M!...` (MySQL never) or `/*!` with other
// digit counts depends on the server and its version, which the planner
// does not know: an INSERT / REPLACE with one is error 1235 naming the
// table when it is on a rule table with the comment run or skipped.
//
// MariaDB's `SET STATEMENT var=value[, ...] FOR statement` is planned as
// its statement, in place. A sequence call among the variables, or
// sql_mode among them when the statement needs planning, is error 1235.
//
// MariaDB's INSERT / REPLACE ... RETURNING select_expr_list (10.5+; the
// last clause, after VALUES / SET / SELECT and ON DUPLICATE KEY UPDATE),
// which the TiDB parser cannot read: the lexer finds the first unquoted
// RETURNING at parenthesis depth 0 (not after a '.'; RETURNING is reserved
// in MariaDB), and the parser reads only the text before it (a prefix, so
// offsets stay valid; a RETURNING inside /*! ... */ gets the comment
// closed). Keys are filled and NEXTVAL spliced in that prefix as without
// RETURNING; the clause reaches the server byte for byte, so the server
// returns the stored keys in its result set, one row per row inserted
// (the first key is still LAST_INSERT_ID(id)). A sequence call in the
// RETURNING list is error 1235 (it would be evaluated per row). When the
// prefix does not parse but the whole text does (MySQL, where a column may
// be named returning), the whole text is planned.
//
// A statement on a rule table that the parser cannot read (MySQL's row
// alias VALUES ... AS new, with or without ON DUPLICATE KEY UPDATE) is
// error 1235 naming the table; the same statement on any other table is
// not read and passes through.
// Stored program bodies (a text starting with CREATE ... BEGIN, or BEGIN
// NOT ATOMIC) pass through whole.
//
// # LOAD DATA
//
// LOAD DATA LOCAL INFILE into a rule table is a LoadData plan (load.go,
// docs/loaddata.md): Plan.Load renders the statement so that every record
// of the file is read with one more first field, @__leaf_g, its generated
// key, which the SET list puts in the key column; where the file gives the
// key (the key in the column list, or no column list: the table's visible
// columns from Env.Columns), its value goes to @__leaf_v and is kept
// unless it is NULL, missing or converts to 0 (only NULL or missing under
// NO_AUTO_VALUE_ON_ZERO), as AUTO_INCREMENT would. The first generated key
// becomes LAST_INSERT_ID() through the flag @__leaf_f, which LoadPrelude
// must create and clear first. Plan.Load.Format says how the server reads
// the file (FIELDS / LINES / IGNORE, the session's NO_BACKSLASH_ESCAPES);
// a rewriter/loadfile Transformer writes the keys into it as it streams.
// LOAD DATA without LOCAL, LOAD XML, a load that is not alone in its text,
// a SET of the key column, a format the transformer cannot key (see
// loadfile.Format.Check), executable comments and prepared loads are
// error 1235 naming the table; the key named twice in the column list is
// 1110. Loads into other tables pass through.
//
// # Several statements in one text
//
// Env.DB and Env.Mode are the session's as they were before the text.
// A `USE db` (db a plain, backquoted or, under ANSI_QUOTES, double-quoted
// name) changes the database the later statements of the text are
// resolved against. After a USE that cannot be followed (inside an
// executable comment not every server runs, anything but one name after
// USE, a USE inside PREPARE / EXECUTE IMMEDIATE text) an INSERT / REPLACE
// into an unqualified table that any rule could match is error 1235.
//
// After a statement that may set sql_mode (any SET naming sql_mode, also
// inside `/*!40101 ... */` and SET @old=@@sql_mode; not SET STATEMENT ...
// FOR, which sets it for its own statement) the new mode is not known: a
// later statement of the text that needs planning (a rule-table INSERT /
// REPLACE or a sequence call) is error 1235 asking to send the SET on its
// own. As the mode can change how the rest of the text is read, the rest
// is read with every combination of ANSI_QUOTES and NO_BACKSLASH_ESCAPES
// and refused if any reading needs planning.
//
// Statements built at run time are not seen by the proxy. PREPARE s FROM
// src and EXECUTE IMMEDIATE src [USING ...] are read where src holds
// string literals (one literal, adjacent literals, or an expression such
// as CONCAT('...', '...'): their contents, unescaped with the session's
// sql_mode, concatenated): when that text has an INSERT / REPLACE on a
// rule table or a sequence call, the statement is error 1235 naming the
// table and pointing at the binary protocol (COM_STMT_PREPARE, which the
// proxy plans) or a plain statement; a SET of sql_mode or a USE there
// counts as above. PREPARE s FROM @var, EXECUTE IMMEDIATE @var and
// EXECUTE s (of a statement prepared earlier) pass through unseen, as do
// statements run by stored routines and triggers; as s may set sql_mode,
// EXECUTE s counts as a SET of sql_mode for the rest of its text.
package rewriter
