package proxy

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/proxy/wire"
)

// What the proxy honours on both legs. A capability the backend offers but
// the relay cannot carry is not advertised to clients (see doc.go):
//   - DEPRECATE_EOF: the response walker expects EOF packets;
//   - QUERY_ATTRIBUTES, OPTIONAL_RESULTSET_METADATA, ZSTD: MySQL 8 only, not relayed;
//   - MariaDB progress reports, COM_MULTI, metadata caching, bulk unit results:
//     they change response shapes the walker follows.
const (
	proxyCaps = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG |
		mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_NO_SCHEMA | mysql.CLIENT_COMPRESS |
		mysql.CLIENT_ODBC | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_IGNORE_SPACE |
		mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_INTERACTIVE | mysql.CLIENT_SSL |
		mysql.CLIENT_IGNORE_SIGPIPE | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_RESERVED |
		mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_MULTI_STATEMENTS | mysql.CLIENT_MULTI_RESULTS |
		mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_CONNECT_ATTRS |
		mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_SESSION_TRACK |
		mysql.CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS
	proxyExtCaps = wire.MariaDBStmtBulk | wire.MariaDBExtTypeInfo

	// Flags the client chooses and the backend session must share, so both
	// legs frame and count alike. SSL and COMPRESS are per leg and
	// negotiated separately on each.
	mirroredCaps = mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG | mysql.CLIENT_NO_SCHEMA |
		mysql.CLIENT_ODBC | mysql.CLIENT_LOCAL_FILES | mysql.CLIENT_IGNORE_SPACE |
		mysql.CLIENT_INTERACTIVE | mysql.CLIENT_IGNORE_SIGPIPE | mysql.CLIENT_MULTI_STATEMENTS |
		mysql.CLIENT_MULTI_RESULTS | mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_SESSION_TRACK |
		mysql.CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS

	// The backend leg always needs these, whatever the client sent.
	backendBaseCaps = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_TRANSACTIONS |
		mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH | mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA |
		mysql.CLIENT_CONNECT_ATTRS
)
