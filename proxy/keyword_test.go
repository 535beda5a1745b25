package proxy

import "testing"

func TestStartsSet(t *testing.T) {
	tests := []struct {
		q    string
		want bool
	}{
		{"SET sql_mode = ''", true},
		{"set\tautocommit=1", true},
		{"  /* pool */ -- x\n# y\n SET @a = 1", true},
		{"/*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */", true},
		{"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;", true},
		{"/*!SET sql_mode=''*/", true},
		{"/*! set sql_mode=''*/", true},
		{"/*!99999 SET sql_mode='' */", true}, // maybe not run: a needless re-read
		{"/*M!100100 SET sql_mode='' */", true},
		{"/*M!SET sql_mode='' */", true},
		{"/* c */ /*!40101 /* inner */ SET sql_mode='' */", true},
		{"/*Mine*/ SET sql_mode=''", true},
		{"SET STATEMENT max_statement_time=1 FOR SELECT 1", true},
		{"SELECT 1", false},
		{"SETTINGS", false},
		{"/*!40101 SELECT 1 */", false},
		{"/* SET */ SELECT 1", false},
		{"/*!40101", false},
		{"/* unterminated SET", false},
		{"/*M", false},
		{"", false},
		{"INSERT INTO t SET a = 1", false},
	}
	for _, tt := range tests {
		if got := startsSet([]byte(tt.q)); got != tt.want {
			t.Errorf("startsSet(%q) = %v, want %v", tt.q, got, tt.want)
		}
	}
	q := []byte("/* c */ /*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */")
	if n := testing.AllocsPerRun(100, func() { startsSet(q) }); n != 0 {
		t.Errorf("startsSet allocates %v times", n)
	}
}

func TestContainsFold(t *testing.T) {
	for in, want := range map[string]bool{
		"SET SESSION SQL_MODE = 'ANSI'":   true,
		"set @@session.sql_mode=''":       true,
		"SET sql_mode=CONCAT(@@sql_mode)": true,
		"SET autocommit=0":                false,
		"SET NAMES utf8mb4":               false,
		"SET sqlXmode=1":                  false,
		"":                                false,
	} {
		if got := containsFold([]byte(in), "sql_mode"); got != want {
			t.Errorf("containsFold(%q) = %v, want %v", in, got, want)
		}
	}
}
