package killsql

import "testing"

// A KILL among the statements of a multi-statement text: its id mapped in
// place when Target finds the session, the server's 1094 as a SIGNAL
// otherwise, the text refused when it cannot be mapped before it runs.
func TestMapMulti(t *testing.T) {
	// Sessions 7 and 1000 may be killed: their backend threads are 70 and
	// 10000; 8 is another user's (not found).
	target := func(id uint32) (uint32, bool) {
		switch id {
		case 7, 1000:
			return id * 10, true
		}
		return 0, false
	}
	const unknown8 = "SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1094, MESSAGE_TEXT = 'Unknown thread id: 8'"
	for _, c := range []struct {
		q, want string
		kills   int
	}{
		{"SELECT 1; KILL QUERY 7", "SELECT 1; KILL QUERY 70", 1},
		{"KILL 1000; SELECT 2", "KILL 10000; SELECT 2", 1},
		{"kill soft query 7 ; kill hard 1000;", "kill soft query 70 ; kill hard 10000;", 2},
		{"/* c */ KILL CONNECTION 7 -- x\n; SELECT 'KILL 8'", "/* c */ KILL CONNECTION 70 -- x\n; SELECT 'KILL 8'", 1},
		{"SELECT 1; KILL 8; SELECT 2", "SELECT 1; " + unknown8 + "; SELECT 2", 1},
		{"SELECT 1; KILL 4294967296", "SELECT 1; SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1094, MESSAGE_TEXT = 'Unknown thread id: 4294967296'", 1},
		{"SELECT 1; KILL 99999999999999999999", "SELECT 1; SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1094, MESSAGE_TEXT = 'Unknown thread id: 9223372036854775807'", 1},
		{"SELECT 1; KILL QUERY CONNECTION_ID()", "SELECT 1; KILL QUERY CONNECTION_ID()", 1},
		{"SELECT 1; SELECT 'KILL 7'", "SELECT 1; SELECT 'KILL 7'", 0},
	} {
		out, n, refuse := MapMulti([]byte(c.q), target)
		if refuse != "" || string(out) != c.want || n != c.kills {
			t.Errorf("MapMulti(%q) = %q, %d, %q\nwant %q, %d", c.q, out, n, refuse, c.want, c.kills)
		}
	}
	for q, want := range map[string]string{
		"SELECT 1; KILL @id":            MultiUnmappable,
		"SET @id = 5; KILL 1+@id":       MultiUnmappable,
		"SELECT 1; KILL QUERY ID 5":     MultiUnmappable,
		"SELECT 1; KILL USER app":       MultiUnmappable,
		"SELECT 1; KILL":                MultiUnmappable,
		`SELECT 'a\'; KILL 7; SELECT 1`: SplitAmbiguous,
	} {
		if out, _, refuse := MapMulti([]byte(q), target); refuse != want || out != nil {
			t.Errorf("MapMulti(%q) = %q, %q, want refused with %q", q, out, refuse, want)
		}
	}
}
