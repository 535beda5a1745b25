package proxy

import (
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// WriteOK answers the client's command with an OK packet carrying the
// backend's last status flags.
func (s *Session) WriteOK(affected, insertID uint64, warnings uint16) error {
	p := wire.OKPacket(affected, insertID, s.status, warnings)
	if s.caps&mysql.CLIENT_SESSION_TRACK != 0 {
		p = append(p, 0) // empty info string, length-encoded as session tracking wants
	}
	if err := s.c.WritePacket(p); err != nil {
		return s.setFatal(err)
	}
	return s.setFatal(s.c.Flush())
}

// WriteError answers the client's command with an ERR packet; the session
// stays usable.
func (s *Session) WriteError(code uint16, sqlState, msg string) error {
	return s.writeErrFlush(code, sqlState, msg)
}

// WriteResultSet answers with a text-protocol result of BIGINT columns
// (nil = NULL), for a COM_QUERY the proxy answers itself.
func (s *Session) WriteResultSet(cols []string, rows [][]*int64) error {
	return s.writeInt64Result(cols, rows, false)
}

// WriteBinaryResultSet is WriteResultSet in the binary protocol, for a
// COM_STMT_EXECUTE the proxy answers itself (the statement must have been
// prepared on the backend with the same number of columns, so the client's
// statement metadata matches).
func (s *Session) WriteBinaryResultSet(cols []string, rows [][]*int64) error {
	return s.writeInt64Result(cols, rows, true)
}

// writeOut writes p, a packet built in the session's reusable buffer
// s.out, and keeps the (maybe grown) buffer for the next: every packet of
// a result the proxy makes is built there, so a NEXTVAL answer costs no
// allocation.
func (s *Session) writeOut(p []byte) error {
	s.out = p[:0]
	if err := s.c.WritePacket(p); err != nil {
		return s.setFatal(err)
	}
	return nil
}

// writeResultHead writes a result's head: the column count n, each
// column's definition (def appends column i's, ext: the client takes
// MariaDB's extended type info) and the EOF after them.
func (s *Session) writeResultHead(n int, def func(p []byte, i int, ext bool) []byte) error {
	if err := s.writeOut(mysql.AppendLengthEncodedInteger(s.out[:0], uint64(n))); err != nil {
		return err
	}
	ext := s.extCaps&wire.MariaDBExtTypeInfo != 0
	for i := range n {
		if err := s.writeOut(def(s.out[:0], i, ext)); err != nil {
			return err
		}
	}
	return s.writeOut(wire.AppendEOF(s.out[:0], s.status))
}

// writeResultEnd writes the EOF after a result's rows and flushes.
func (s *Session) writeResultEnd() error {
	if err := s.writeOut(wire.AppendEOF(s.out[:0], s.status)); err != nil {
		return err
	}
	s.trimOut()
	return s.setFatal(s.c.Flush())
}

func (s *Session) writeInt64Result(cols []string, rows [][]*int64, binaryRows bool) error {
	if err := s.writeResultHead(len(cols), func(p []byte, i int, ext bool) []byte {
		return wire.AppendBigintColumnDef(p, cols[i], ext)
	}); err != nil {
		return err
	}
	for _, row := range rows {
		p := s.out[:0]
		if binaryRows {
			bitmap := (len(cols) + 7 + 2) / 8
			p = append(p, 0x00)
			start := len(p)
			for range bitmap {
				p = append(p, 0)
			}
			for i, v := range row {
				if v == nil {
					bit := i + 2
					p[start+bit/8] |= 1 << (bit % 8)
					continue
				}
				u := uint64(*v)
				p = append(p, byte(u), byte(u>>8), byte(u>>16), byte(u>>24), byte(u>>32), byte(u>>40), byte(u>>48), byte(u>>56))
			}
		} else {
			for _, v := range row {
				if v == nil {
					p = append(p, 0xFB)
					continue
				}
				var num [20]byte
				txt := strconv.AppendInt(num[:0], *v, 10)
				p = append(p, byte(len(txt)))
				p = append(p, txt...)
			}
		}
		if err := s.writeOut(p); err != nil {
			return err
		}
	}
	return s.writeResultEnd()
}

// WriteTextResultSet answers with a text-protocol result of VARCHAR
// (utf8mb4) columns, nil = NULL: for the proxy's own SHOW statements.
func (s *Session) WriteTextResultSet(cols []string, rows [][]*string) error {
	w := func(p []byte) error {
		if err := s.c.WritePacket(p); err != nil {
			return s.setFatal(err)
		}
		return nil
	}
	var p []byte
	if err := w(mysql.AppendLengthEncodedInteger(p, uint64(len(cols)))); err != nil {
		return err
	}
	for _, c := range cols {
		if err := w(wire.AppendColumnDef(nil, c, s.extCaps&wire.MariaDBExtTypeInfo != 0,
			45, 1024, mysql.MYSQL_TYPE_VAR_STRING, 0)); err != nil {
			return err
		}
	}
	if err := w(wire.AppendEOF(nil, s.status)); err != nil {
		return err
	}
	for _, row := range rows {
		p = p[:0]
		for _, v := range row {
			if v == nil {
				p = append(p, 0xFB)
				continue
			}
			p = mysql.AppendLengthEncodedInteger(p, uint64(len(*v)))
			p = append(p, *v...)
		}
		if err := w(p); err != nil {
			return err
		}
	}
	if err := w(wire.AppendEOF(nil, s.status)); err != nil {
		return err
	}
	return s.setFatal(s.c.Flush())
}
