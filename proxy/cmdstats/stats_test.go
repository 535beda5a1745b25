package cmdstats_test

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/cmdstats"
)

// Commands count by kind; error codes beyond the session's table are left
// to the caller.
func TestSessionCounts(t *testing.T) {
	var st cmdstats.Session
	for _, c := range []byte{mysql.COM_QUERY, mysql.COM_STMT_PREPARE, mysql.COM_STMT_EXECUTE, 0xFA, mysql.COM_PING} {
		st.CountCmd(c)
	}
	for code := uint16(1000); code < 1000+cmdstats.SessionErrCodes; code++ {
		if !st.AddErr(code) {
			t.Fatalf("code %d refused with room in the table", code)
		}
	}
	if st.AddErr(2000) {
		t.Fatal("a code beyond the table was counted")
	}
	if !st.AddErr(1000) {
		t.Fatal("a known code was refused")
	}
	c := cmdstats.CommandStats{Errors: map[uint16]uint64{}}
	st.AddTo(&c)
	if want := [cmdstats.Kinds]uint64{cmdstats.Query: 1, cmdstats.Prepare: 1, cmdstats.Execute: 2, cmdstats.Other: 1}; c.Commands != want {
		t.Errorf("commands %v, want %v", c.Commands, want)
	}
	if c.Errors[1000] != 2 || len(c.Errors) != cmdstats.SessionErrCodes {
		t.Errorf("errors %v", c.Errors)
	}
}
