package integration

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
)

// The differential test's workload generator (issue 28). A workload is a
// list of steps, all made from one seed, run in one session directly on an
// AUTO_INCREMENT twin table and in one session through the proxy on a rule
// table; {T} in a step's text is the table. Each step carries features
// (what kind of key it gives, which shape it is) so that a divergence can
// be classified (differential_known_test.go) without parsing SQL.

// diffMode is one of the four sql_modes a workload starts in.
type diffMode struct {
	name   string
	set    string // the statement that sets it ("" for the server's default)
	navoz  bool   // NO_AUTO_VALUE_ON_ZERO
	strict bool
}

var diffModes = []diffMode{
	{"default", "", false, true},
	{"empty", "SET sql_mode = ''", false, false},
	{"navoz-strict", "SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO,STRICT_TRANS_TABLES'", true, true},
	{"navoz", "SET sql_mode = 'NO_AUTO_VALUE_ON_ZERO'", true, false},
}

// diffStep is one statement (or one multi-statement text).
type diffStep struct {
	sql    string // {T} is the table
	args   []any  // bound values (prepared only)
	prep   bool   // server-side prepared (COM_STMT_PREPARE + EXECUTE)
	inTx   bool   // a transaction is open after it
	around bool   // run by another session straight on the backend (a bulk import)
	load   []byte // LOAD DATA LOCAL: the file, served as Reader::<reader>
	reader string
	feats  []string
}

func (s diffStep) has(f string) bool {
	for _, x := range s.feats {
		if x == f {
			return true
		}
	}
	return false
}

func (s diffStep) String() string {
	if s.around {
		return "(around the proxy) " + s.sql
	}
	if s.load != nil {
		return fmt.Sprintf("%s  -- file %q", s.sql, s.load)
	}
	if !s.prep {
		return s.sql
	}
	return fmt.Sprintf("PREPARE+EXECUTE %s args=%s", s.sql, fmtArgs(s.args))
}

func fmtArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			parts[i] = "nil"
		case string:
			parts[i] = fmt.Sprintf("%q", v)
		default:
			parts[i] = fmt.Sprintf("%v(%T)", v, v)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

type diffWorkload struct {
	seed   int64
	bigint bool
	mode   int // index in diffModes
	steps  []diffStep
}

func (w *diffWorkload) describe() string {
	kt := "INT"
	if w.bigint {
		kt = "BIGINT"
	}
	return fmt.Sprintf("seed %d: %s key, sql_mode %s", w.seed, kt, diffModes[w.mode].name)
}

// diffColumns are the columns after the key, the same in both tables.
const diffColumns = "u VARCHAR(32) NULL, v INT NOT NULL DEFAULT 0, w VARCHAR(16) NULL, UNIQUE KEY uk (u)"

// diffGen builds one workload.
type diffGen struct {
	r    *rand.Rand
	w    *diffWorkload
	mode int // current sql_mode (the workload may change it)
	inTx bool
	fSet bool // @f is set
	// modeUnsure: the last step was a text with a SET sql_mode that a
	// failing statement before it may have skipped
	modeUnsure bool
	inText     bool // building a multi-statement text
}

// keyVal is the value written for the key in one row.
type keyVal struct {
	text  string // SQL text ("?" when bound)
	arg   any    // the bound value when text is "?"
	gen   bool   // AUTO_INCREMENT generates a key for it
	expl  bool   // an explicit key the counter moves past (a positive number)
	feats []string
}

var zeroLike = []string{"'00'", "0.4", "'0.4'", "-0", "' 0'", "0x00", "b'0'", "-0.4", "1-1", "CAST(0 AS CHAR)", "'abc'", "''", "'0x'"}

func (g *diffGen) navoz() bool { return diffModes[g.mode].navoz }

// key picks a key value; bound allows a "?" (prepared statements).
func (g *diffGen) key(bound bool) keyVal {
	r := g.r
	n := r.Intn(100)
	if bound && n < 25 {
		return g.boundKey()
	}
	switch {
	case n < 30:
		return keyVal{text: "NULL", gen: true}
	case n < 40:
		if g.navoz() {
			return keyVal{text: "0", feats: []string{"zero-kept"}}
		}
		return keyVal{text: "0", gen: true}
	case n < 50:
		if g.navoz() {
			return keyVal{text: "DEFAULT", gen: true, feats: []string{"default-navoz"}}
		}
		return keyVal{text: "DEFAULT", gen: true}
	case n < 62:
		z := zeroLike[r.Intn(len(zeroLike))]
		if g.navoz() {
			return keyVal{text: z, feats: []string{"zerolike-navoz"}}
		}
		return keyVal{text: z, gen: true, feats: []string{"zerolike", "zerolike:" + z}}
	case n < 85:
		return g.explicitKey()
	case n < 93:
		return g.exprKey()
	default:
		k := -1 - r.Intn(3)
		return keyVal{text: fmt.Sprint(k), feats: []string{"negative"}}
	}
}

func (g *diffGen) explicitKey() keyVal {
	r := g.r
	n := r.Intn(100)
	switch {
	case n < 70:
		return keyVal{text: fmt.Sprint(1 + r.Intn(40)), expl: true}
	case n < 85:
		return keyVal{text: fmt.Sprintf("'%d'", 1+r.Intn(40)), expl: true, feats: []string{"quoted-key"}}
	case n < 97:
		return keyVal{text: fmt.Sprint(1000 + r.Intn(50)), expl: true}
	default:
		if g.w.bigint {
			return keyVal{text: fmt.Sprint(5_000_000_000 + r.Intn(3)), expl: true}
		}
		return keyVal{text: fmt.Sprint(2147483647 - r.Intn(3)), expl: true, feats: []string{"int-end"}}
	}
}

func (g *diffGen) exprKey() keyVal {
	r := g.r
	var t string
	switch n := r.Intn(5); {
	case n == 0 && g.fSet:
		t = "@f + 2"
	case n == 4:
		return keyVal{text: "@unset + 1", gen: true, feats: []string{"expr-key", "expr-null"}} // NULL: AUTO_INCREMENT generates
	case n == 1:
		t = fmt.Sprintf("1000 + %d", r.Intn(20))
	case n == 2:
		t = fmt.Sprintf("CAST('%d' AS SIGNED)", 1+r.Intn(40))
	default:
		t = fmt.Sprintf("%d + 1", r.Intn(40))
	}
	return keyVal{text: t, expl: true, feats: []string{"expr-key"}}
}

func (g *diffGen) boundKey() keyVal {
	r := g.r
	switch n := r.Intn(10); {
	case n < 3:
		return keyVal{text: "?", arg: nil, gen: true}
	case n < 4:
		if g.navoz() {
			return keyVal{text: "?", arg: int64(0), feats: []string{"bound-zero-navoz"}}
		}
		return keyVal{text: "?", arg: int64(0), gen: true}
	case n < 5:
		z := []any{0.4, "00", "0.4", "abc"}[r.Intn(4)]
		f := "bound-zerolike"
		if g.navoz() {
			f = "bound-zerolike-navoz"
		}
		return keyVal{text: "?", arg: z, gen: !g.navoz(), feats: []string{f}}
	case n < 6 && r.Intn(3) == 0:
		return keyVal{text: "?", arg: int64(-1 - r.Intn(3)), feats: []string{"bound-negative"}}
	default:
		return keyVal{text: "?", arg: int64(1 + r.Intn(40)), expl: true, feats: []string{"bound-key"}}
	}
}

var diffU = []string{"'a'", "'b'", "'c'", "'d'", "'e'", "NULL", "NULL"}

// row is "(k, u, v)"; args get the bound values in order.
func (g *diffGen) row(k keyVal, withKey, withW, prep bool, args *[]any) string {
	var parts []string
	if withKey {
		parts = append(parts, k.text)
		if k.text == "?" {
			*args = append(*args, k.arg)
		}
	}
	u := diffU[g.r.Intn(len(diffU))]
	v := fmt.Sprint(g.r.Intn(10))
	if prep && g.r.Intn(2) == 0 {
		*args = append(*args, strings.Trim(u, "'"))
		if u == "NULL" {
			(*args)[len(*args)-1] = nil
		}
		u = "?"
	}
	if prep && g.r.Intn(2) == 0 {
		*args = append(*args, int64(g.r.Intn(10)))
		v = "?"
	}
	parts = append(parts, u, v)
	if withW {
		parts = append(parts, fmt.Sprintf("'w%d'", g.r.Intn(100)))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// keyFeats: the features of the keys of one statement, in row order.
func keyFeats(keys []keyVal) []string {
	var f []string
	anyGen, allExpl := false, len(keys) > 0
	for _, k := range keys {
		f = append(f, k.feats...)
		if k.expl && anyGen {
			f = append(f, "explicit-after-gen")
		}
		if k.gen {
			anyGen = true
		}
		if !k.expl {
			allExpl = false
		}
	}
	if allExpl {
		f = append(f, "all-explicit")
	}
	if anyGen {
		f = append(f, "gen")
		for _, k := range keys {
			if !k.gen {
				f = append(f, "mixed") // generated and given keys in one statement
				break
			}
		}
	} else {
		f = append(f, "no-gen")
	}
	for _, k := range keys {
		if k.expl && k.text != "?" && !slices.Contains(k.feats, "expr-key") {
			f = append(f, "literal-key")
			break
		}
	}
	for _, k := range keys {
		if k.expl {
			return append(f, "has-explicit")
		}
	}
	return f
}

// insertValues: INSERT/REPLACE ... VALUES in its forms.
func (g *diffGen) insertValues(prep bool) diffStep {
	r := g.r
	verb := "INSERT"
	tail := ""
	feats := []string{}
	switch n := r.Intn(100); {
	case n < 15:
		verb, feats = "INSERT IGNORE", append(feats, "ignore")
	case n < 30:
		verb, feats = "REPLACE", append(feats, "replace")
	case n < 42:
		tail = []string{" ON DUPLICATE KEY UPDATE v = v + 1", " ON DUPLICATE KEY UPDATE v = VALUES(v), w = 'dup'"}[r.Intn(2)]
		feats = append(feats, "odku")
	}
	nrows := 1
	if r.Intn(3) == 0 {
		nrows = 2 + r.Intn(3)
	}
	var args []any
	var keys []keyVal
	var rows []string
	shape := r.Intn(10)
	if nrows > 1 && shape != 3 {
		feats = append(feats, "multi-row")
	}
	switch {
	case shape < 3: // key absent
		for range nrows {
			rows = append(rows, g.row(keyVal{}, false, false, prep, &args))
			keys = append(keys, keyVal{gen: true})
		}
		feats = append(feats, "absent")
		return diffStep{sql: verb + " INTO {T} (u, v) VALUES " + strings.Join(rows, ", ") + tail, args: args, prep: prep, feats: append(feats, keyFeats(keys)...)}
	case shape < 4: // INSERT ... SET, one row
		k := g.key(prep)
		var a []any
		set := ""
		if r.Intn(4) == 0 {
			k = keyVal{gen: true}
		} else {
			set = "id = " + k.text + ", "
			if k.text == "?" {
				a = append(a, k.arg)
			}
		}
		set += "u = " + diffU[r.Intn(len(diffU))] + fmt.Sprintf(", v = %d", r.Intn(10))
		return diffStep{sql: verb + " INTO {T} SET " + set + tail, args: a, prep: prep, feats: append(append(feats, "set"), keyFeats([]keyVal{k})...)}
	case shape < 5: // no column list
		for range nrows {
			k := g.key(prep)
			keys = append(keys, k)
			rows = append(rows, g.row(k, true, true, prep, &args))
		}
		feats = append(feats, "no-column-list")
		return diffStep{sql: verb + " INTO {T} VALUES " + strings.Join(rows, ", ") + tail, args: args, prep: prep, feats: append(feats, keyFeats(keys)...)}
	}
	for range nrows {
		k := g.key(prep)
		keys = append(keys, k)
		rows = append(rows, g.row(k, true, false, prep, &args))
	}
	if tail == "" && r.Intn(8) == 0 {
		tail = " RETURNING id, u"
		feats = append(feats, "returning")
	}
	return diffStep{sql: verb + " INTO {T} (id, u, v) VALUES " + strings.Join(rows, ", ") + tail, args: args, prep: prep, feats: append(feats, keyFeats(keys)...)}
}

// statement is one single statement of any kind.
func (g *diffGen) statement(prep bool) diffStep {
	r := g.r
	n := r.Intn(100)
	switch {
	case n < 62:
		return g.insertValues(prep)
	case n < 78:
		return g.insertSelect(prep)
	case n < 83:
		g.fSet = true
		return diffStep{sql: fmt.Sprintf("SET @f = %d", 1+r.Intn(40))}
	case n < 86 && !prep && !g.inText:
		return g.loadData()
	case n < 88:
		return diffStep{sql: fmt.Sprintf("DELETE FROM {T} WHERE id = %d", 1+r.Intn(20)), prep: prep}
	case n < 92:
		return diffStep{sql: fmt.Sprintf("UPDATE {T} SET v = v + 1 WHERE u = 'a' OR id = %d", 1+r.Intn(20)), prep: prep}
	case n < 96 && !prep:
		m := r.Intn(len(diffModes))
		set := diffModes[m].set
		if set == "" {
			set = "SET sql_mode = DEFAULT"
		}
		g.mode = m
		return diffStep{sql: set, feats: []string{"mode-change"}}
	case n < 98 && !prep:
		m := r.Intn(len(diffModes))
		set := diffModes[m].set
		if set == "" {
			set = "SET sql_mode = DEFAULT"
		}
		f := "dynamic-mode" // NO_AUTO_VALUE_ON_ZERO turned on or off unseen
		if diffModes[m].navoz == g.navoz() {
			f = "dynamic-mode-same"
		}
		g.mode = m
		return diffStep{sql: "EXECUTE IMMEDIATE \"" + set + "\"", feats: []string{f}}
	}
	return g.insertValues(prep)
}

// step is the next step of the workload.
func (g *diffGen) step() diffStep {
	r := g.r
	if g.modeUnsure {
		g.modeUnsure = false
		set := diffModes[g.mode].set
		if set == "" {
			set = "SET sql_mode = DEFAULT"
		}
		return diffStep{sql: set}
	}
	n := r.Intn(100)
	switch {
	case n < 5:
		if g.inTx {
			g.inTx = false
			return diffStep{sql: []string{"COMMIT", "ROLLBACK"}[r.Intn(2)], feats: []string{"tx-end"}}
		}
		g.inTx = true
		return diffStep{sql: "BEGIN", feats: []string{"tx"}}
	case n < 15:
		// A multi-statement text: 2 or 3 text statements.
		k := 2 + r.Intn(2)
		var qs []string
		feats := []string{"multi-statement"}
		sawGen, sawMode := false, false
		g.inText = true
		defer func() { g.inText = false }()
		for range k {
			s := g.statement(false)
			qs = append(qs, s.sql)
			feats = append(feats, s.feats...)
			if sawMode && (s.has("gen") || s.has("no-gen") || s.has("insert-select")) {
				feats = append(feats, "insert-after-mode-set")
			}
			sawMode = sawMode || s.has("mode-change") || s.has("dynamic-mode") || s.has("dynamic-mode-same")
			if sawGen && s.has("has-explicit") {
				feats = append(feats, "explicit-after-gen-stmt")
			}
			if s.has("gen") || s.has("insert-select") {
				sawGen = true
			}
		}
		// A statement before the SET may fail and leave the sql_mode
		// as it was: the next step says it again.
		g.modeUnsure = sawMode
		return diffStep{sql: strings.Join(qs, "; "), feats: feats}
	case n < 17 && !g.inTx: // (inside the session's transaction it would wait for its locks)
		// Keys written around the proxy, as by a bulk import: AUTO_INCREMENT's
		// counter moves past them, the tag does not (README, Write paths).
		k := 1 + r.Intn(60)
		return diffStep{sql: fmt.Sprintf("INSERT IGNORE INTO {T} (id, u, v) SELECT seq, CONCAT('i', seq), 0 FROM seq_%d_to_%d", k, k+r.Intn(3)),
			around: true, feats: []string{"around"}}
	case n < 45:
		s := g.statement(true)
		if s.prep {
			s.feats = append(s.feats, "prepared")
			if s.has("literal-key") {
				s.feats = append(s.feats, "prepared-literal-key")
			}
		}
		return s
	}
	return g.statement(false)
}

// newDiffWorkload makes the workload of seed: its table's key type, its
// sql_mode and nsteps steps (0: 6 to 20, as the seed says).
func newDiffWorkload(seed int64, nsteps int) *diffWorkload {
	r := rand.New(rand.NewSource(seed))
	w := &diffWorkload{seed: seed, bigint: r.Intn(2) == 0, mode: r.Intn(len(diffModes))}
	if nsteps == 0 {
		nsteps = 6 + r.Intn(15)
	}
	g := &diffGen{r: r, w: w, mode: w.mode}
	if s := diffModes[w.mode].set; s != "" {
		w.steps = append(w.steps, diffStep{sql: s})
	}
	for len(w.steps) < nsteps {
		st := g.step()
		st.inTx = g.inTx
		w.steps = append(w.steps, st)
	}
	if g.inTx {
		w.steps = append(w.steps, diffStep{sql: "COMMIT", feats: []string{"tx-end"}})
	}
	return w
}
