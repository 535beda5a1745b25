package raw

import (
	"strings"
	"testing"
)

func TestStringSharesMemory(t *testing.T) {
	b := []byte("SELECT 1")
	s := String(b)
	if s != "SELECT 1" {
		t.Fatalf("String = %q", s)
	}
	b[7] = '2'
	if s != "SELECT 2" {
		t.Fatalf("String copied its bytes: %q after the slice changed", s)
	}
	if !SameMemory(s, String(b)) {
		t.Error("two views of one slice are not the same memory")
	}
	if SameMemory(s, strings.Clone(s)) {
		t.Error("a copy counts as the same memory")
	}
	if String(nil) != "" || String([]byte{}) != "" {
		t.Error("an empty slice is not the empty string")
	}
}
