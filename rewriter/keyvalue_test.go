package rewriter

import "testing"

// What MariaDB 10.11 stores for a key value in an INT AUTO_INCREMENT
// column (insert into a (id) values (v); measured, strict and not): 0
// means AUTO_INCREMENT generated a key; bad, that strict mode refuses the
// value (1366 / 1265) and non-strict mode warns and generates.
func TestKeyValueAsMariaDB(t *testing.T) {
	for _, tt := range []struct {
		text string
		want int64
		bad  bool
	}{
		{"0", 0, false}, {"'00'", 0, false}, {"0.4", 0, false}, {"'0.4'", 0, false}, {"-0", 0, false},
		{"' 0'", 0, false}, {"0x00", 0, false}, {"b'0'", 0, false}, {"-0.4", 0, false},
		{"'abc'", 0, true}, {"''", 0, true}, {"'0x'", 0, true}, {"x'00'", 0, true},
		{"0.5", 1, false}, {"'0.5'", 1, false}, {"0.5e0", 0, false}, {"1.5e0", 2, false}, {"2.5e0", 2, false},
		{"'2.5'", 3, false}, {"2.5", 3, false}, {"'1e3'", 1000, false}, {"' 7 '", 7, false}, {"'7x'", 7, true},
		{"_utf8'0'", 0, false}, {"N'0'", 0, false}, {"-0.5", -1, false}, {"'-0.5'", -1, false}, {"0e0", 0, false},
		{"'0e5'", 0, false}, {"TRUE", 1, false}, {"FALSE", 0, false}, {"0b0", 0, false}, {"'+0'", 0, false},
		{"'.4'", 0, false}, {"'-.4'", 0, false}, {"'0.49999'", 0, false}, {"'\t0'", 0, false}, {"'0 '", 0, false},
		{"9223372036854775807", 9223372036854775807, false}, {"'12.5e1'", 125, false}, {"0x1F", 31, false}, {"b'101'", 5, false},
	} {
		l := lexer{sql: tt.text}
		v, last, ok := readKeyLiteral(&l, l.next())
		if !ok || last.end != len(tt.text) {
			t.Errorf("%s: not read as a literal (ok %v, ends at %d)", tt.text, ok, last.end)
			continue
		}
		if v.Null || v.Overflow || v.V != tt.want || v.Bad != tt.bad {
			t.Errorf("%s = %+v, want %d (bad %v)", tt.text, v, tt.want, tt.bad)
		}
	}
	for _, text := range []string{"1-1", "CAST(0 AS CHAR)", "@f + 2", "(0)", "-'0'", "0x", "1000 + 1"} {
		l := lexer{sql: text}
		if _, last, ok := readKeyLiteral(&l, l.next()); ok && last.end == len(text) {
			t.Errorf("%s read as a literal", text)
		}
	}
	if v := ConvertString("99999999999999999999"); !v.Overflow {
		t.Errorf("20 nines: %+v, want overflow", v)
	}
}

func TestKeyValueGenerates(t *testing.T) {
	strict, loose, nozero := Mode{Strict: true}, Mode{}, Mode{NoAutoValueOnZero: true}
	for _, tt := range []struct {
		v            KeyValue
		mode         Mode
		ignore, want bool
	}{
		{KeyValue{Null: true}, nozero, false, true},
		{KeyValue{}, loose, false, true},
		{KeyValue{}, nozero, false, false},
		{KeyValue{Bad: true}, strict, false, false}, // the server refuses it
		{KeyValue{Bad: true}, strict, true, true},   // IGNORE: a warning and 0
		{KeyValue{Bad: true}, loose, false, true},
		{KeyValue{V: 3}, loose, false, false},
		{KeyValue{Overflow: true}, loose, false, false},
	} {
		if got := tt.v.Generates(tt.mode, tt.ignore); got != tt.want {
			t.Errorf("%+v in %+v (ignore %v): generates %v, want %v", tt.v, tt.mode, tt.ignore, got, tt.want)
		}
	}
}

// An explicit key after a generated one of its tag is an Advance, placed
// after the IDs before it, so that those rows get keys below it.
func TestAdvancesInTextOrder(t *testing.T) {
	sql := "INSERT INTO orders (id, name) VALUES (NULL, 'r1'), (5000, 'x'), (NULL, 'r3'); INSERT INTO orders (id, name) VALUES (7000, 'y')"
	p, err := PlanQuery(sql, testEnv(t, Mode{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Explicit) != 0 {
		t.Errorf("Explicit %+v: every explicit key follows a generated one", p.Explicit)
	}
	want := []Advance{{Tag: "order", To: 5000, After: 1}, {Tag: "order", To: 7000, After: 2}}
	if len(p.Advances) != len(want) {
		t.Fatalf("Advances %+v, want %+v", p.Advances, want)
	}
	for i, a := range p.Advances {
		if a.Tag != want[i].Tag || a.To != want[i].To || a.After != want[i].After {
			t.Errorf("Advances[%d] = %+v, want %+v", i, a, want[i])
		}
	}
	// Before every generated key: Explicit, moved past first.
	p, err = PlanQuery("INSERT INTO orders (id, name) VALUES (5000, 'x'), (NULL, 'r')", testEnv(t, Mode{}))
	if err != nil || len(p.Advances) != 0 || len(p.Explicit) != 1 || p.Explicit[0].Max != 5000 {
		t.Errorf("explicit first: %+v %+v %v", p.Explicit, p.Advances, err)
	}
}
