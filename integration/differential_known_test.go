package integration

import (
	"slices"
	"sort"
	"strconv"
	"strings"
)

// knownDivergence is a difference from AUTO_INCREMENT that today's code is
// known to have (issue 28's items, or a documented gap). Each is narrow:
// when an item is fixed, delete its rows and TestDifferential proves the
// fix (LEAFPROXY_DIFF_STRICT=1 shows the classified ones too). The first
// row that matches wins: refusals and sql_mode changes the proxy missed
// come first, "only the numbering differs" last. Features (diffStep.feats)
// say what a step's keys are; before() looks back to the last resync.
type knownDivergence struct {
	name   string
	item   string // issue 28's item, or "gap" (README, Write paths)
	reason string
	match  func(d *diffDivergence) bool
}

// generates: the diverging step gives at least one row a generated key.
func (d *diffDivergence) generates() bool {
	return d.now("gen") || d.now("insert-select")
}

// keys: the stored keys or the reported ones differ, or the proxy's
// statement hit a duplicate key its twin did not.
func (d *diffDivergence) keys() bool {
	return d.has("rows") || d.has("insert-id") || d.has("last-insert-id") || d.has("returning") || d.collides()
}

// collides: the proxy's statement failed on a duplicate primary key where
// its twin did not (a generated key ran into a key already there).
func (d *diffDivergence) collides() bool {
	return strings.Contains(d.p.err, "for key 'PRIMARY'") && d.p.err != d.d.err
}

// behind: the tag lags behind AUTO_INCREMENT's counter (a key it did not
// see): the proxy's keys are lower, or one ran into a key already there.
func (d *diffDivergence) behind() bool {
	return (d.keys() && !d.proxyAhead()) || d.collides()
}

// keysOnly: the tables hold the same rows but for their keys.
func (d *diffDivergence) keysOnly() bool {
	strip := func(rows []string) string {
		var out []string
		for _, r := range rows {
			if i := strings.IndexByte(r, ','); i >= 0 {
				out = append(out, r[i:])
			}
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	return d.d.err == d.p.err && strip(d.d.rows) == strip(d.p.rows)
}

// numberingOnly: the same rows in the same key order, the same result;
// only key values, insert ids and LAST_INSERT_ID() differ.
func (d *diffDivergence) numberingOnly() bool {
	strip := func(rows []string) string {
		var out []string
		for _, r := range rows {
			if i := strings.IndexByte(r, ','); i >= 0 {
				out = append(out, r[i:])
			}
		}
		return strings.Join(out, " ")
	}
	low := func(rows []string) string { // keys 0 and below: never generated
		var out []string
		for _, r := range rows {
			if strings.HasPrefix(r, "(0,") || strings.HasPrefix(r, "(-") {
				out = append(out, r)
			}
		}
		return strings.Join(out, " ")
	}
	return d.only("insert-id", "last-insert-id", "rows", "returning") && strip(d.d.rows) == strip(d.p.rows) && low(d.d.rows) == low(d.p.rows)
}

// maxKey is the largest key of rows (0 if none).
func maxKey(rows []string) int64 {
	var m int64
	for _, r := range rows {
		if i := strings.IndexByte(r, ','); i > 1 {
			if k, err := strconv.ParseInt(r[1:i], 10, 64); err == nil && k > m {
				m = k
			}
		}
	}
	return m
}

// directAhead: AUTO_INCREMENT's keys are ahead of the tag's (the proxy
// generated smaller keys); proxyAhead: the other way round.
func (d *diffDivergence) directAhead() bool { return d.keyOrder() > 0 }
func (d *diffDivergence) proxyAhead() bool  { return d.keyOrder() < 0 }

// keyOrder compares the first key that differs between the tables (in key
// order), else LAST_INSERT_ID(): +1 when the direct one is larger.
func (d *diffDivergence) keyOrder() int {
	key := func(r string) int64 {
		if i := strings.IndexByte(r, ','); i > 1 {
			k, _ := strconv.ParseInt(r[1:i], 10, 64)
			return k
		}
		return 0
	}
	for i := 0; i < len(d.d.rows) && i < len(d.p.rows); i++ {
		if a, b := key(d.d.rows[i]), key(d.p.rows[i]); a != b {
			if a > b {
				return 1
			}
			return -1
		}
	}
	if a, b := maxKey(d.d.rows), maxKey(d.p.rows); a != b {
		if a > b {
			return 1
		}
		return -1
	}
	a, _ := strconv.ParseInt(d.d.lastID, 10, 64)
	b, _ := strconv.ParseInt(d.p.lastID, 10, 64)
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// beforeAny: before(f) for one of fs.
func (d *diffDivergence) beforeAny(fs ...string) bool {
	for _, f := range fs {
		if d.before(f) {
			return true
		}
	}
	return false
}

var knownDivergences = append([]knownDivergence{
	{
		name:   "INSERT ... SELECT in a multi-statement text",
		item:   "gap",
		reason: "refused (1235) before anything is written: the proxy counts the SELECT's rows first",
		match: func(d *diffDivergence) bool {
			return d.now("multi-statement") && d.now("insert-select") && errCode(d.p.err) == "1235"
		},
	},
	{
		name:   "key written as an expression",
		item:   "refusal",
		reason: "refused (1235) before anything is written: the proxy cannot tell which key an expression (1000 + 1, @f + 2, CAST(0 AS CHAR)) stores, to generate one where AUTO_INCREMENT would or to move the tag past it",
		match: func(d *diffDivergence) bool {
			return errCode(d.p.err) == "1235" && strings.Contains(d.p.err, "is given as an expression")
		},
	},
	{
		name:   "a key value that converts with a warning, generated without it",
		item:   "gap",
		reason: "'abc', '', '0x' (non-strict or IGNORE) store 0 and AUTO_INCREMENT generates, warning 1366 / 1265: the proxy puts the generated key in their place before the server sees them, so there is no conversion and no warning (the rows, keys and other warnings are the same)",
		match: func(d *diffDivergence) bool {
			// (with a gap of another size beside it: the same rows in the same key order)
			return d.has("warnings") && !d.has("error") && lostConversionWarning(d.d.warnings, d.p.warnings) &&
				(!d.has("rows") || d.without("warnings").numberingOnly()) && (d.only("warnings") || d.generates())
		},
	},
	{
		name:   "167 at the end of a key column, answered by the proxy",
		item:   "4",
		reason: "the same code and words, then the tag and column (leafproxy: ...), as issue 28 asks; the proxy answers it itself, so it is not in SHOW WARNINGS afterwards",
		match: func(d *diffDivergence) bool {
			return errCode(d.p.err) == "167" && errCode(d.d.err) == "167" && d.only("error-message", "warnings", "last-insert-id")
		},
	},
	{
		name:   "the tag at its end answers 167 before the server's error on another value",
		item:   "4",
		reason: "at the end of the key column the proxy refuses the statement (167) before the server reads its other values; directly the server's own error on them (1265, 1062) comes first. Both write nothing",
		match: func(d *diffDivergence) bool {
			return errCode(d.p.err) == "167" && d.d.err != "" && errCode(d.d.err) != "167" && !d.has("rows")
		},
	},
	{
		name:   "INSERT after SET sql_mode in one text",
		item:   "gap",
		reason: "refused (1235) before anything is written: the proxy plans a text with the sql_mode from before it",
		match: func(d *diffDivergence) bool {
			return d.now("insert-after-mode-set") && errCode(d.p.err) == "1235"
		},
	},
	{
		name:   "INSERT ... SELECT giving explicit keys after generated rows",
		item:   "7",
		reason: "the largest explicit key of the SELECT moves the tag before the rows are numbered; AUTO_INCREMENT numbers the rows before it from the old counter",
		match:  func(d *diffDivergence) bool { return d.now("select-explicit-key") && d.keys() },
	},
	{
		name:   "insert id of a statement without generated keys",
		item:   "8",
		reason: "MariaDB's OK packet carries the last explicit key when no key was generated; the proxy puts it there for a text of one statement, each statement of a multi-statement text (not beside a CALL or EXECUTE) and a prepared statement (literal keys, bound ones or both), and sends 0 for a bound key that is not positive and a kept 0",
		match: func(d *diffDivergence) bool {
			return d.now("no-gen") && d.only("insert-id") && (d.now("dynamic-mode") || d.now("dynamic-mode-same") ||
				d.now("zero-kept") || d.now("bound-negative") || d.now("bound-zero-navoz") ||
				d.now("bound-zerolike-navoz") || d.now("default-navoz") || d.now("zerolike-navoz"))
		},
	},
	{
		name:   "LAST_INSERT_ID() after a failed multi-row statement keeping a key 0 or below or a bound one, a multi-statement text or INSERT ... SELECT",
		item:   "8",
		reason: "MariaDB keeps LAST_INSERT_ID() when the statement fails before it wrote a row with a generated key; the proxy restores it after a statement of one text whose first generated key is in its last row or followed by a row with a generated key (which marks it written), but cannot tell whether that row was written when the next row keeps a key 0 or below (no marker) or the first row keeps its bound key, and restores nothing in a multi-statement text, an INSERT ... SELECT or a LOAD DATA",
		match: func(d *diffDivergence) bool {
			return d.d.err != "" && d.only("last-insert-id") &&
				((d.now("multi-row") && d.now("mixed") && (d.now("zero-kept") || d.now("negative") || d.now("default-navoz") ||
					d.now("zerolike-navoz") || d.now("bound-key") || d.now("bound-negative") || d.now("bound-zero-navoz"))) ||
					d.now("multi-statement") || d.now("insert-select") || d.now("load"))
		},
	},
	{
		name:   "IGNORE / ON DUPLICATE KEY UPDATE row not inserted",
		item:   "8",
		reason: "documented: when the statement wrote some row (an update, another row inserted) the reported ID is the first generated one even when its row was not inserted (MariaDB: the updated row's key, or the first key inserted); a statement that wrote nothing reports 0 and leaves LAST_INSERT_ID() as MariaDB does",
		match: func(d *diffDivergence) bool {
			return (d.now("ignore") || d.now("odku")) && d.only("insert-id", "last-insert-id") && !wroteNothing(d.d.affected)
		},
	},

	{
		name:   "keys written around the proxy",
		item:   "gap",
		reason: "documented (Write paths): they do not move the tag; a later generated key is lower than AUTO_INCREMENT's, or collides: retried once for a text of one statement, not for IGNORE / LOAD DATA (row skipped), ON DUPLICATE KEY UPDATE (the imported row is updated instead of the one the statement meant) nor in a multi-statement text",
		match: func(d *diffDivergence) bool {
			return d.before("around") && (d.keys() || errCode(d.p.err) == "1062")
		},
	},
	{
		name:   "LOAD DATA: keys given in the file do not move the tag",
		item:   "gap",
		reason: "documented (Write paths): the proxy finds records, not fields; later generated keys, in the same file or after it, can equal a key the file gave (LOCAL's implied IGNORE skips that row)",
		match: func(d *diffDivergence) bool {
			return d.before("load-explicit") && (d.behind() || d.has("warnings"))
		},
	},

	{
		name:   "INSERT ... SELECT as the tag's first use",
		item:   "gap",
		reason: "with no segment loaded yet the block comes from above the first segment (keys from step+1, here 10001), where AUTO_INCREMENT starts at 1",
		match: func(d *diffDivergence) bool {
			return d.now("insert-select") && !d.earlier("gen") && !d.earlier("insert-select") && d.keys()
		},
	},
	{
		name:   "AUTO_INCREMENT reserves values it does not use (innodb_autoinc_lock_mode=1)",
		item:   "gap",
		reason: "MariaDB's default lock mode reserves a value for every row of a multi-row INSERT mixing given and generated keys, and batches of 1, 2, 4, ... for INSERT ... SELECT; the proxy leaves no such gap (LEAFPROXY_DIFF_LOCK_MODE=0 compares with the traditional mode)",
		match: func(d *diffDivergence) bool {
			return d.keysOnly() && d.directAhead() && d.beforeAny("mixed", "insert-select")
		},
	},
	{
		name:   "a key 0 or below written: MariaDB spends an AUTO_INCREMENT value",
		item:   "gap",
		reason: "an INSERT writing key 0 (under NO_AUTO_VALUE_ON_ZERO) or a negative key moves MariaDB's counter by one; the tag does not move",
		match: func(d *diffDivergence) bool {
			return d.keysOnly() && d.directAhead() &&
				d.beforeAny("zero-kept", "zerolike-navoz", "select-zero-navoz", "bound-zero-navoz", "bound-zerolike-navoz", "negative")
		},
	},
	{
		name:   "explicit key of a failed statement moves the tag",
		item:   "gap",
		reason: "the proxy moves the tag past a literal key when it plans the statement; AUTO_INCREMENT's counter moves only when that row is written",
		match:  func(d *diffDivergence) bool { return d.keysOnly() && d.proxyAhead() && d.failedWith("literal-key") },
	},
	{
		name:   "explicit key at the column's end in a failed statement: the tag is at its end",
		item:   "gap",
		reason: "the tag moved past a literal key at the INT column's maximum before the statement failed; AUTO_INCREMENT's counter did not move, so it still generates where the proxy answers 167",
		match: func(d *diffDivergence) bool {
			return errCode(d.p.err) == "167" && errCode(d.d.err) != "167" && d.failedWith("literal-key")
		},
	},
	{
		name:   "a bound key of a failed or skipped row moves the tag",
		item:   "gap",
		reason: "the proxy moves the tag past a bound key it keeps when the EXECUTE arrives; AUTO_INCREMENT's counter moves only when that row is written (the same rows, keys further apart)",
		match: func(d *diffDivergence) bool {
			return d.keysOnly() && d.proxyAhead() && d.beforeAny("bound-key", "bound-zero-navoz", "bound-zerolike-navoz")
		},
	},
	{
		name: "MariaDB: multi-row REPLACE fails 1062 on the AUTO_INCREMENT table",
		// (LOAD DATA ... REPLACE too)
		item:   "gap",
		reason: "REPLACE (NULL,'b',2), (-2,'e',8), (DEFAULT,NULL,1), (DEFAULT,'b',2) over rows (-2,NULL), (6,'b'), (8,'e') fails with 1062 on PRIMARY on the AUTO_INCREMENT twin (MariaDB 10.11) and succeeds on a table without AUTO_INCREMENT, directly too",
		match: func(d *diffDivergence) bool {
			return d.now("replace") && (d.now("multi-row") || d.now("load")) && errCode(d.d.err) == "1062" && d.p.err == ""
		},
	},
}, numberingDivergences...)

// numberingDivergences come last: the same rows in the same key order.
var numberingDivergences = []knownDivergence{
	{
		name:   "AUTO_INCREMENT leaves the larger gap",
		item:   "gap",
		reason: "the same rows in the same key order, only the numbering differs: MariaDB spent values the tag did not (lock mode 1 reservations, rows not inserted)",
		match:  func(d *diffDivergence) bool { return d.numberingOnly() && d.directAhead() },
	},
	{
		name:   "the proxy leaves the larger gap",
		item:   "gap",
		reason: "the same rows in the same key order, only the numbering differs: the proxy spent keys MariaDB gave back (rows of a failed or IGNOREd row, an explicit key of a row not written, an INSERT ... SELECT block)",
		match:  func(d *diffDivergence) bool { return d.numberingOnly() && d.proxyAhead() },
	},
}

// lostConversionWarning: the direct side has warnings 1366 / 1265 (a key
// value's conversion) that the proxy's lacks, and the rest are the same.
func lostConversionWarning(direct, proxy []string) bool {
	var rest []string
	lost := false
	for _, w := range direct {
		if strings.Contains(w, " 1366 ") || strings.Contains(w, " 1265 ") {
			lost = true
			continue
		}
		rest = append(rest, w)
	}
	return lost && strings.Join(rest, "|") == strings.Join(proxy, "|")
}

// without is d as if field had not differed.
func (d *diffDivergence) without(field string) *diffDivergence {
	c := *d
	c.fields = slices.DeleteFunc(slices.Clone(d.fields), func(f string) bool { return f == field })
	return &c
}

// wroteNothing: a text of one statement that affected no row.
func wroteNothing(affected []int64) bool { return len(affected) == 1 && affected[0] == 0 }
