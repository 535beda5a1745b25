package sessionend

import (
	"net"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// KillQuery runs KILL QUERY tid on conn, a backend connection of its own
// logged in as the thread's owner, within timeout, and quits it (the
// caller closes conn).
func KillQuery(conn net.Conn, timeout time.Duration, tid uint32) error {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	l := wire.NewLeg("backend", conn, 4<<10, 4<<10)
	if err := l.WriteCommand(append([]byte{mysql.COM_QUERY}, "KILL QUERY "+strconv.FormatUint(uint64(tid), 10)...)); err != nil {
		return err
	}
	if err := l.Flush(); err != nil {
		return err
	}
	p, err := l.ReadPacket(nil, 64<<10)
	if err != nil {
		return err
	}
	_, _ = conn.Write(ComQuit[:])
	if wire.IsErr(p) {
		return wire.ParseErr(p)
	}
	return nil
}
