package integration

import (
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
)

// An unknown tag one typo away from a known one: MariaDB's 4091 with a
// did-you-mean, for NEXTVAL, blocks and LEAFPROXY_DECODE alike.
func TestUnknownTagDidYouMean(t *testing.T) {
	backend := testdb.Start(t)
	cfg := leafConfig(t, backend, nil)
	cfg.Sequences.Tags = map[string]config.Tag{"order": {Generator: "segment"}, "message": {Generator: "snowflake"}}
	lf := startLeaf(t, cfg)
	db := lf.open(t, "", nil)
	for _, tc := range []struct{ q, msg string }{
		{"SELECT NEXTVAL('ordr')", "Unknown SEQUENCE: 'ordr' (did you mean 'order'?)"},
		{"SELECT NEXTVAL('Order', 10)", "Unknown SEQUENCE: 'Order' (did you mean 'order'?)"},
		{"SELECT NEXTVAL('mesage')", "Unknown SEQUENCE: 'mesage' (did you mean 'message'?)"},
		{"SELECT LEAFPROXY_DECODE('oder', 5)", "Unknown SEQUENCE: 'oder' (did you mean 'order'?)"},
		{"SELECT NEXTVAL('invoice')", "Unknown SEQUENCE: 'invoice'"},
	} {
		_, err := db.Exec(tc.q)
		code, state := myErr(err)
		if code != 4091 || state != "42S02" || !strings.HasSuffix(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want 4091 42S02 ending %q", tc.q, err, tc.msg)
		}
	}
}
