package intercept

import (
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// Client is a session's client side as the answers the proxy makes
// itself need it: the leg, the backend's last status flags, the
// negotiated capabilities and the session's reusable buffer, in which
// every packet of a result the proxy makes is built (so a NEXTVAL answer
// costs no allocation). Its methods' errors are the leg's: the caller
// records them as the session's fatal error (the caller also trims Out).
type Client struct {
	Leg           *wire.Leg
	Status        uint16
	Caps, ExtCaps uint32
	Out           *[]byte
}

// WriteOK answers the client's command with an OK packet carrying the
// backend's last status flags.
func (c Client) WriteOK(affected, insertID uint64, warnings uint16) error {
	p := wire.OKPacket(affected, insertID, c.Status, warnings)
	if c.Caps&mysql.CLIENT_SESSION_TRACK != 0 {
		p = append(p, 0) // empty info string, length-encoded as session tracking wants
	}
	if err := c.Leg.WritePacket(p); err != nil {
		return err
	}
	return c.Leg.Flush()
}

// writeOut writes p, a packet built in *c.Out, and keeps the (maybe
// grown) buffer for the next.
func (c Client) writeOut(p []byte) error {
	*c.Out = p[:0]
	return c.Leg.WritePacket(p)
}

// writeResultHead writes a result's head: the column count n, each
// column's definition (def appends column i's, ext: the client takes
// MariaDB's extended type info) and the EOF after them.
func (c Client) writeResultHead(n int, def func(p []byte, i int, ext bool) []byte) error {
	if err := c.writeOut(mysql.AppendLengthEncodedInteger((*c.Out)[:0], uint64(n))); err != nil {
		return err
	}
	ext := c.ExtCaps&wire.MariaDBExtTypeInfo != 0
	for i := range n {
		if err := c.writeOut(def((*c.Out)[:0], i, ext)); err != nil {
			return err
		}
	}
	return c.writeOut(wire.AppendEOF((*c.Out)[:0], c.Status))
}

// writeResultEnd writes the EOF after a result's rows and flushes.
func (c Client) writeResultEnd() error {
	if err := c.writeOut(wire.AppendEOF((*c.Out)[:0], c.Status)); err != nil {
		return err
	}
	return c.Leg.Flush()
}

// WriteInt64Result answers with a result of BIGINT columns (nil = NULL),
// in the text protocol for a COM_QUERY the proxy answers itself or, when
// binaryRows, in the binary protocol for a COM_STMT_EXECUTE (the statement
// must have been prepared on the backend with the same number of columns,
// so the client's statement metadata matches).
func (c Client) WriteInt64Result(cols []string, rows [][]*int64, binaryRows bool) error {
	if err := c.writeResultHead(len(cols), func(p []byte, i int, ext bool) []byte {
		return wire.AppendBigintColumnDef(p, cols[i], ext)
	}); err != nil {
		return err
	}
	for _, row := range rows {
		p := (*c.Out)[:0]
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
		if err := c.writeOut(p); err != nil {
			return err
		}
	}
	return c.writeResultEnd()
}

// WriteRows answers with a result set of typed columns (with their real
// MySQL types in the column definitions) and rows of Values, NULLs
// included, in the text protocol or, binaryRows, the binary one (for a
// COM_STMT_EXECUTE the proxy answers itself: the statement must have been
// prepared on the backend with columns of the same number and types). The
// caller has checked the rows (wire.CheckRows).
func (c Client) WriteRows(cols []wire.Column, rows [][]wire.Value, binaryRows bool) error {
	if err := c.writeResultHead(len(cols), func(p []byte, i int, ext bool) []byte {
		return wire.AppendTypedColumnDef(p, cols[i], ext)
	}); err != nil {
		return err
	}
	for _, row := range rows {
		var p []byte
		if binaryRows {
			p = wire.AppendBinaryRow((*c.Out)[:0], cols, row)
		} else {
			p = wire.AppendTextRow((*c.Out)[:0], cols, row)
		}
		if err := c.writeOut(p); err != nil {
			return err
		}
	}
	return c.writeResultEnd()
}

// WriteTextResultSet answers with a text-protocol result of VARCHAR
// (utf8mb4) columns, nil = NULL: for the proxy's own SHOW statements.
func (c Client) WriteTextResultSet(cols []string, rows [][]*string) error {
	w := c.Leg.WritePacket
	var p []byte
	if err := w(mysql.AppendLengthEncodedInteger(p, uint64(len(cols)))); err != nil {
		return err
	}
	for _, col := range cols {
		if err := w(wire.AppendColumnDef(nil, col, c.ExtCaps&wire.MariaDBExtTypeInfo != 0,
			45, 1024, mysql.MYSQL_TYPE_VAR_STRING, 0)); err != nil {
			return err
		}
	}
	if err := w(wire.AppendEOF(nil, c.Status)); err != nil {
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
	if err := w(wire.AppendEOF(nil, c.Status)); err != nil {
		return err
	}
	return c.Leg.Flush()
}
