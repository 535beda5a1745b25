package login

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What the proxy honours on both legs. A capability the backend offers but
// the relay cannot carry is not advertised to clients (see package proxy's
// doc.go, "Looking like the backend"):
//   - DEPRECATE_EOF: the response walker expects EOF packets;
//   - QUERY_ATTRIBUTES, OPTIONAL_RESULTSET_METADATA, ZSTD: MySQL 8 only, not relayed;
//   - MariaDB progress reports, COM_MULTI, metadata caching, bulk unit results:
//     they change response shapes the walker follows.
const (
	ProxyCaps = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG |
		mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_NO_SCHEMA | mysql.CLIENT_COMPRESS |
		mysql.CLIENT_ODBC | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_IGNORE_SPACE |
		mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_INTERACTIVE | mysql.CLIENT_SSL |
		mysql.CLIENT_IGNORE_SIGPIPE | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_RESERVED |
		mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_MULTI_STATEMENTS | mysql.CLIENT_MULTI_RESULTS |
		mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_CONNECT_ATTRS |
		mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_SESSION_TRACK |
		mysql.CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS
	ProxyExtCaps = wire.MariaDBStmtBulk | wire.MariaDBExtTypeInfo

	// MirroredCaps are the flags the client chooses and the backend session
	// must share, so both legs frame and count alike. SSL and COMPRESS are
	// per leg and negotiated separately on each.
	MirroredCaps = mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG | mysql.CLIENT_NO_SCHEMA |
		mysql.CLIENT_ODBC | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_IGNORE_SPACE |
		mysql.CLIENT_INTERACTIVE | mysql.CLIENT_IGNORE_SIGPIPE | mysql.CLIENT_MULTI_STATEMENTS |
		mysql.CLIENT_MULTI_RESULTS | mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_SESSION_TRACK |
		mysql.CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS

	// BackendBaseCaps: the backend leg always needs these, whatever the client sent.
	BackendBaseCaps = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_TRANSACTIONS |
		mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA |
		mysql.CLIENT_CONNECT_ATTRS
)
