// Package errstyle is the one rule for the text of every error the proxy
// writes to a client (an ERR packet, a warning, an HTTP ID API error):
//
//   - An error MariaDB itself raises for the same fault, with the same
//     code, keeps the server's words first, as the server words them with
//     the proxy's names filled in ("Unknown SEQUENCE: 'ordr'", "Out of
//     range value for column 'id' at row 2", "Sequence 'order' has run
//     out"), so clients and scripts that match the server's text still
//     match. What the proxy adds follows them, usually as "(leafproxy:
//     ...)".
//   - Every other message, one the proxy composes itself (1235 not
//     supported, 1105, its own syntax help), starts with "leafproxy: ".
//
// Check says whether a message follows the rule; Styled makes one that
// does not (the proxy's own text) start with the prefix; NewCoded is an
// error with its code and SQLSTATE, for errors without a type of their own.
package errstyle

import (
	"fmt"
	"regexp"
	"strings"
)

// Prefix starts every message the proxy composes itself.
const Prefix = "leafproxy: "

// templates are MariaDB's messages (their start) for the codes the proxy
// answers in the server's words, as regular expressions: a name is '...'.
var templates = map[uint16]*regexp.Regexp{}

func init() {
	for code, t := range map[uint16]string{
		167:  "Out of range value for column '*' at row ",        // ER_WARN_DATA_OUT_OF_RANGE
		1040: "Too many connections",                             // ER_CON_COUNT_ERROR
		1041: "Out of memory",                                    // ER_OUT_OF_RESOURCES
		1043: "Bad handshake",                                    // ER_HANDSHAKE_ERROR
		1045: "Access denied for user '*'@'*' (using password: ", // ER_ACCESS_DENIED_ERROR
		1047: "Unknown command",                                  // ER_UNKNOWN_COM_ERROR
		1050: "Table '*' already exists",                         // ER_TABLE_EXISTS_ERROR
		1054: "Unknown column '*' in '*'",                        // ER_BAD_FIELD_ERROR
		1059: "Identifier name '*' is too long",                  // ER_TOO_LONG_IDENT
		1062: "Duplicate entry '*' for key '*'",                  // ER_DUP_ENTRY
		1064: "You have an error in your SQL syntax",             // ER_PARSE_ERROR
		1094: "Unknown thread id: ",                              // ER_NO_SUCH_THREAD
		1103: "Incorrect table name '*'",                         // ER_WRONG_TABLE_NAME
		1110: "Column '*' specified twice",                       // ER_FIELD_SPECIFIED_TWICE
		1129: "Host '*' is blocked because of many connection errors; unblock with 'mariadb-admin flush-hosts'|Host '*' is blocked ",
		1136: "Column count doesn't match value count at row ",             // ER_WRONG_VALUE_COUNT_ON_ROW
		1153: "Got a packet bigger than 'max_allowed_packet' bytes",        // ER_NET_PACKET_TOO_LARGE
		1156: "Got packets out of order",                                   // ER_NET_PACKETS_OUT_OF_ORDER
		1210: "Incorrect arguments to ",                                    // ER_WRONG_ARGUMENTS
		1227: "Access denied; you need (at least one of) the ",             // ER_SPECIFIC_ACCESS_DENIED_ERROR
		1300: "Invalid * character string: '*'",                            // ER_INVALID_CHARACTER_STRING
		1835: "Malformed communication packet",                             // ER_MALFORMED_PACKET
		1957: "Unknown query id: ",                                         // ER_NO_SUCH_QUERY
		1970: "* does not support subqueries or stored functions",          // ER_SUBQUERIES_NOT_SUPPORTED
		3159: "Connections using insecure transport are prohibited while ", // ER_SECURE_TRANSPORT_REQUIRED
		4084: "Sequence '*' has run out",                                   // ER_SEQUENCE_RUN_OUT
		4085: "Sequence '*' has out of range value for options",            // ER_SEQUENCE_INVALID_DATA
		4091: "Unknown SEQUENCE: '*'",                                      // ER_UNKNOWN_SEQUENCES
	} {
		var alts []string
		for _, a := range strings.Split(t, "|") {
			alts = append(alts, strings.ReplaceAll(regexp.QuoteMeta(a), `\*`, `(?:[^']|'')*`))
		}
		templates[code] = regexp.MustCompile(`^(?:` + strings.Join(alts, "|") + `)`)
	}
}

// ServerWorded reports whether msg starts with MariaDB's own words for
// code.
func ServerWorded(code uint16, msg string) bool {
	re := templates[code]
	return re != nil && re.MatchString(msg)
}

// Check returns an error saying why msg, the text of an error with code,
// breaks the rule, nil when it follows it.
func Check(code uint16, msg string) error {
	if strings.HasPrefix(msg, Prefix) || ServerWorded(code, msg) {
		return nil
	}
	if templates[code] != nil {
		return fmt.Errorf("error %d %q: neither MariaDB's words for %d (%s) nor %q first", code, msg, code, templates[code], Prefix)
	}
	return fmt.Errorf("error %d %q: the proxy's own message does not start with %q", code, msg, Prefix)
}

// Styled is msg as the rule wants it: unchanged when it follows the rule,
// else (the proxy's own text) with Prefix first.
func Styled(code uint16, msg string) string {
	if Check(code, msg) == nil {
		return msg
	}
	return Prefix + msg
}
