package backend

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/login"
	"github.com/leafproxy/leafproxy/proxy/wire"
)

// ErrUnreachable is the code a client gets when the backend cannot be
// reached: ER_CONNECT_TO_FOREIGN_DATA_SOURCE, a server code (libmariadb
// turns a server-sent code in the client range 2000-2999 into 2027
// "Received malformed packet").
const ErrUnreachable = 1429

// Refusal turns a failed backend login into what the client is told: the
// backend's own ERR (1045, 1049, ...) or 1429 naming the address addr.
func Refusal(err error, addr string) *login.Error {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return &login.Error{Code: me.Code, State: me.State, Msg: me.Message}
	}
	return &login.Error{Code: ErrUnreachable, State: "HY000",
		Msg: fmt.Sprintf("leafproxy: can't connect to backend MySQL server on '%s': %v", addr, RootCause(err))}
}

// AuthFailure turns a failed relayed authentication (Pending.Authenticate)
// into what the client is told. A refused password (1045, 1698) counts
// against the client's host, as the proxy's own checks do (k).
func AuthFailure(err error, host string, k login.Checker, addr string) error {
	var me *mysql.MyError
	if !errors.As(err, &me) {
		var ie *wire.IOError
		if errors.As(err, &ie) && ie.Leg == "client" {
			return err // the client went away: nobody to tell
		}
		return Refusal(err, addr)
	}
	if me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_NO_PASSWORD_ERROR {
		k.CountFailure(host)
	}
	return &login.Error{Code: me.Code, State: me.State, Msg: me.Message}
}

// ConfirmAdmin says whether the session the backend just authenticated as
// user, on leg b, is that very account: CURRENT_USER() names it, not an
// anonymous account that accepts any name. The caller asks only for user
// names listed in admins.
func ConfirmAdmin(b *wire.Leg, user string, log *slog.Logger) (bool, error) {
	cur, err := login.CurrentUser(b)
	if err != nil {
		return false, err
	}
	at := bytes.LastIndexByte(cur, '@')
	if at < 0 || string(cur[:at]) != user {
		log.Warn("login name is listed in admins but the backend authenticated another account: not an admin",
			"user", user, "current_user", string(cur))
		return false, nil
	}
	return true, nil
}
