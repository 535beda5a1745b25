package schema

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheckTag(t *testing.T) {
	for _, tc := range []struct {
		tag   string
		code  uint16 // 0: valid
		state string
		say   string
	}{
		{tag: "order"},
		{tag: "订单"},
		{tag: "😀"},
		{tag: strings.Repeat("a", 128)},
		{tag: strings.Repeat("标", 128)}, // 384 bytes, 128 characters
		{tag: "with space and 'quote'"},
		{tag: "", code: 1103, state: "42000", say: "must not be empty"},
		{tag: strings.Repeat("a", 129), code: 1059, state: "42000", say: "at most 128 characters"},
		{tag: strings.Repeat("标", 129), code: 1059, state: "42000", say: "this one 129"},
		{tag: "ab\xff", code: 1300, state: "HY000", say: `'ab\xFF'`},
		{tag: "\xe8\xae", code: 1300, state: "HY000", say: `'\xE8\xAE'`}, // a cut 3-byte character
		{tag: "a\xc0\x80", code: 1300, state: "HY000", say: `\xC0\x80`},  // overlong NUL
	} {
		err := CheckTag(tc.tag)
		if tc.code == 0 {
			if err != nil {
				t.Errorf("CheckTag(%q) = %v, want nil", tc.tag, err)
			}
			continue
		}
		var te *TagNameError
		if !errors.As(err, &te) || te.Code() != tc.code || te.SQLState() != tc.state || !strings.Contains(te.Error(), tc.say) {
			t.Errorf("CheckTag(%q) = %v, want %d %s saying %q", tc.tag, err, tc.code, tc.state, tc.say)
			continue
		}
		if !utf8.ValidString(te.Error()) {
			t.Errorf("CheckTag(%q): message is not UTF-8: %q", tc.tag, te.Error())
		}
	}
}
