package integration

import (
	"fmt"
	"strings"
)

// The differential test's statement shapes beyond INSERT ... VALUES:
// INSERT ... SELECT and LOAD DATA LOCAL (see differential_gen_test.go).

// insertSelect: INSERT/REPLACE ... SELECT shapes.
func (g *diffGen) insertSelect(prep bool) diffStep {
	r := g.r
	verb := []string{"INSERT", "INSERT", "INSERT IGNORE", "REPLACE"}[r.Intn(4)]
	n := 1 + r.Intn(4)
	feats := []string{"insert-select"}
	switch verb {
	case "INSERT IGNORE":
		feats = append(feats, "ignore")
	case "REPLACE":
		feats = append(feats, "replace")
	}
	var q string
	switch r.Intn(8) {
	case 6:
		q = fmt.Sprintf("%s INTO {T} (u, v) SELECT CONCAT('a', seq), seq FROM seq_1_to_%d UNION ALL SELECT CONCAT('b', seq), seq FROM seq_1_to_2", verb, n)
		feats = append(feats, "union")
	case 7:
		q = fmt.Sprintf("%s INTO {T} (u, v) WITH c AS (SELECT seq FROM seq_1_to_%d) SELECT CONCAT('w', seq), seq FROM c ORDER BY seq DESC LIMIT 2", verb, n)
		feats = append(feats, "with")
	case 0:
		q = fmt.Sprintf("%s INTO {T} (u, v) SELECT CONCAT('s', seq), seq FROM seq_1_to_%d", verb, n)
	case 1:
		q = fmt.Sprintf("%s INTO {T} (id, u, v) SELECT NULL, CONCAT('n', seq), seq FROM seq_1_to_%d ORDER BY seq DESC", verb, n)
	case 2:
		q = fmt.Sprintf("%s INTO {T} (u, v) SELECT CONCAT(u, 'x'), v + 1 FROM {T} ORDER BY id LIMIT %d", verb, n)
		feats = append(feats, "self-select")
	case 3:
		k := 1 + r.Intn(40)
		if r.Intn(3) == 0 {
			k += 1000
		}
		q = fmt.Sprintf("%s INTO {T} (id, u, v) SELECT IF(seq = 2, %d, NULL), CONCAT('e', seq), seq FROM seq_1_to_%d", verb, k, n)
		feats = append(feats, "select-key")
		if n >= 2 {
			feats = append(feats, "select-explicit-key")
		}
	case 4:
		q = fmt.Sprintf("%s INTO {T} (id, u, v) SELECT seq * 0, CONCAT('z', seq), seq FROM seq_1_to_%d", verb, n)
		feats = append(feats, "select-key", "select-zero")
		if g.navoz() {
			feats = append(feats, "select-zero-navoz")
		}
	default:
		q = fmt.Sprintf("%s INTO {T} (u, v) SELECT CONCAT('s', seq), seq FROM seq_1_to_%d ON DUPLICATE KEY UPDATE v = VALUES(v) + 10", "INSERT", n)
		feats = append(feats, "odku")
	}
	return diffStep{sql: q, prep: prep, feats: feats}
}

// loadData: LOAD DATA LOCAL INFILE in a random format, the file served by
// a go-sql-driver reader handler (registered by the runner).
func (g *diffGen) loadData() diffStep {
	r := g.r
	sep := []string{",", "\t", ";"}[r.Intn(3)]
	sepSQL := map[string]string{",": "','", "\t": "'\\t'", ";": "';'"}[sep]
	enc := r.Intn(3) == 0
	eol := []string{"\n", "\r\n"}[r.Intn(2)]
	withKey := r.Intn(2) == 0
	feats := []string{"load"}
	var b strings.Builder
	q := "LOAD DATA LOCAL INFILE 'Reader::" + fmt.Sprintf("diff%d_%d", g.w.seed, len(g.w.steps)) + "' "
	switch r.Intn(4) {
	case 0:
		q += "REPLACE "
		feats = append(feats, "replace")
	case 1:
		q += "IGNORE "
	}
	q += "INTO TABLE {T} FIELDS TERMINATED BY " + sepSQL
	if enc {
		q += ` OPTIONALLY ENCLOSED BY '"'`
	}
	q += " LINES TERMINATED BY '" + strings.NewReplacer("\r", "\\r", "\n", "\\n").Replace(eol) + "'"
	if r.Intn(4) == 0 {
		q += " IGNORE 1 LINES"
		b.WriteString("header" + sep + "line" + eol)
	}
	if withKey {
		q += " (id, u, v)"
	} else {
		q += " (u, v)"
		feats = append(feats, "gen")
	}
	set := r.Intn(3) == 0
	if set {
		q += " SET w = 'ld'"
	}
	for range 1 + r.Intn(4) {
		if withKey {
			switch n := r.Intn(10); {
			case n < 3:
				b.WriteString("\\N")
				feats = append(feats, "gen")
			case n < 5:
				feats = append(feats, "load-zero")
				if !g.navoz() {
					feats = append(feats, "gen")
				} else if set {
					feats = append(feats, "load-navoz-set")
				}
				if n == 3 {
					b.WriteString("0")
				} else if r.Intn(2) == 0 {
					b.WriteString("abc")
				}
			default:
				fmt.Fprint(&b, 1+r.Intn(40))
				feats = append(feats, "load-explicit")
			}
			b.WriteString(sep)
		}
		u := []string{"a", "b", "c", "d", "e", "\\N"}[r.Intn(6)]
		if enc && u != "\\N" {
			u = `"` + u + `"`
		}
		fmt.Fprintf(&b, "%s%s%d%s", u, sep, r.Intn(10), eol)
	}
	return diffStep{sql: q, feats: feats, load: []byte(b.String()), reader: fmt.Sprintf("diff%d_%d", g.w.seed, len(g.w.steps))}
}
