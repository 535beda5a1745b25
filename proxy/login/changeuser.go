package login

import (
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// MaxChangeUserFailures is how many failed COM_CHANGE_USER a connection
// may make; MariaDB answers any further one with 1047 (Unknown command),
// successful ones in between notwithstanding.
const MaxChangeUserFailures = 3

// ChangeUser is a client's COM_CHANGE_USER with the session's defaults
// filled in (plugin, collation, attributes), as the backend is to get it.
type ChangeUser struct {
	User, DB, Plugin string
	Auth             []byte
	Charset          uint16
	Attrs            []byte
}

// RelayChangeUser relays the client's COM_CHANGE_USER cu to the session's
// backend leg b (backend-account mode): the client answered the greeting's
// scramble, which is the backend's, so the backend checks it itself, and
// any auth switch it asks for is relayed (RelayAuth, with ex). withAttrs:
// the backend takes connection attributes. A client host over its
// failed-login budget (k.Throttle) is refused first, and a refused password
// counts against it (k.CountFailure; k.Log is the session's).
//
// It returns the backend's OK, for the client once the caller has recorded
// the change, or a *Error to tell the client, the connection staying
// usable; with a refusal, reset says the backend reset its session (it
// keeps the old account, reset, unless it refused the command outright
// after too many failures). Any other error is fatal to the session.
func RelayChangeUser(c, b *wire.Leg, cu *ChangeUser, withAttrs bool, ex *Exchange, k Checker, remote net.Addr) (ok []byte, reset bool, err error) {
	host := HostKey(remote)
	if wait, blocked := k.Throttle.Blocked(host, time.Now()); blocked {
		return nil, false, HostBlocked(remote, wait)
	}
	pkt := ChangeUserPacket(cu.User, cu.Auth, cu.DB, cu.Charset, cu.Plugin, cu.Attrs, withAttrs)
	if err := b.WriteCommand(pkt); err != nil {
		return nil, false, err
	}
	if err := b.Flush(); err != nil {
		return nil, false, err
	}
	ok, err = RelayAuth(c, b, ex)
	var me *mysql.MyError
	if errors.As(err, &me) {
		k.Log.Info("change user refused by the backend", "to", cu.User, "code", me.Code)
		if me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_NO_PASSWORD_ERROR {
			k.CountFailure(host, "user", cu.User)
		}
		// Refused after too many failures: nothing was reset.
		return nil, me.Code != mysql.ER_UNKNOWN_COM_ERROR, &Error{Code: me.Code, State: me.State, Msg: me.Message}
	}
	return ok, false, err
}

// IsAccount says whether rows, the answer to SELECT CURRENT_USER() (err
// its error), name user's own account ('user'@'host'): the admin check of
// a relayed change user.
func IsAccount(rows [][]*string, err error, user string) bool {
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 || rows[0][0] == nil {
		return false
	}
	cur := *rows[0][0]
	at := len(cur) - 1
	for at >= 0 && cur[at] != '@' {
		at--
	}
	return at >= 0 && cur[:at] == user
}

// Admins is the set of user names listed in admins (backend-account mode),
// for IsAdmin.
func Admins(names []string) *map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		if n != "" {
			m[n] = true
		}
	}
	return &m
}

// IsAdmin says whether admins (nil: none) lists user.
func IsAdmin(admins *map[string]bool, user string) bool { return admins != nil && (*admins)[user] }

// ParseChangeUser reads COM_CHANGE_USER's payload p (after the command
// byte) as a client with capabilities caps writes it: user, auth data
// (length-prefixed with SECURE_CONNECTION), database, charset, plugin and
// connection attributes, each optional part only when present. The
// returned slices are copies, no longer than p's parts (fuzzed:
// proxy/changeuser_fuzz_test.go).
func ParseChangeUser(p []byte, caps uint32) (*ChangeUser, error) {
	r := &ChangeUser{}
	cstr := func() (string, error) {
		i := wire.IndexNul(p)
		if i == len(p) {
			return "", wire.ErrShortHandshake
		}
		v := string(p[:i])
		p = p[i+1:]
		return v, nil
	}
	var err error
	if r.User, err = cstr(); err != nil {
		return nil, err
	}
	if caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		if len(p) < 1 || int(p[0]) > len(p)-1 {
			return nil, wire.ErrShortHandshake
		}
		r.Auth = append([]byte(nil), p[1:1+int(p[0])]...)
		p = p[1+int(p[0]):]
	} else {
		v, err := cstr()
		if err != nil {
			return nil, err
		}
		r.Auth = []byte(v)
	}
	if r.DB, err = cstr(); err != nil {
		return nil, err
	}
	if len(p) >= 2 {
		r.Charset = binary.LittleEndian.Uint16(p)
		p = p[2:]
	}
	if caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(p) > 0 {
		if r.Plugin, err = cstr(); err != nil {
			r.Plugin, p = string(p), nil
		}
	}
	if caps&mysql.CLIENT_CONNECT_ATTRS != 0 && len(p) > 0 {
		n, k := wire.LenencUint(p)
		if k == 0 || n > uint64(len(p)-k) {
			return nil, wire.ErrShortHandshake
		}
		r.Attrs = append([]byte(nil), p[k:k+int(n)]...)
	}
	return r, nil
}
