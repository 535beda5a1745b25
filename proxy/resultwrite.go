package proxy

import "github.com/leafproxy/leafproxy/proxy/wire"

// WriteRows answers the client's COM_QUERY with a text-protocol result set
// of typed columns (with their real MySQL types in the column definitions)
// and rows of Values, NULLs included. A value that does not match its
// column's type is a caller bug: nothing is written and an error says so.
func (s *Session) WriteRows(cols []wire.Column, rows [][]wire.Value) error {
	return s.writeRows(cols, rows, false)
}

// WriteBinaryRows is WriteRows in the binary protocol, for a
// COM_STMT_EXECUTE the proxy answers itself (the statement must have been
// prepared on the backend with columns of the same number and types, so
// the client's statement metadata matches).
func (s *Session) WriteBinaryRows(cols []wire.Column, rows [][]wire.Value) error {
	return s.writeRows(cols, rows, true)
}

func (s *Session) writeRows(cols []wire.Column, rows [][]wire.Value, binaryRows bool) error {
	if err := wire.CheckRows(cols, rows); err != nil {
		return err
	}
	if err := s.writeResultHead(len(cols), func(p []byte, i int, ext bool) []byte {
		return wire.AppendTypedColumnDef(p, cols[i], ext)
	}); err != nil {
		return err
	}
	for _, row := range rows {
		var p []byte
		if binaryRows {
			p = wire.AppendBinaryRow(s.out[:0], cols, row)
		} else {
			p = wire.AppendTextRow(s.out[:0], cols, row)
		}
		if err := s.writeOut(p); err != nil {
			return err
		}
	}
	return s.writeResultEnd()
}
