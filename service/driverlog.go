package service

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
)

// go-sql-driver reports what it meets on its connections (a server that
// closed one: "unexpected EOF", "closing bad idle connection: EOF", "busy
// buffer") through a package-wide logger that writes to stderr. Every one
// of those also comes back as an error to the caller, which leafproxy
// handles and logs in its own words (the store down, the backend down,
// a probe failing). So the driver's lines are demoted to debug level in
// the service's log (component=mysql-driver) instead of reaching the
// operator's unfiltered.
//
// The driver copies its logger into each configuration when the
// configuration is made, and mysql.SetLogger is not synchronised with
// that: the logger is installed once, when this package is initialised
// (before any goroutine can parse a DSN), and only its destination
// changes afterwards (RouteDriverLog).

var driverDest atomic.Pointer[slog.Logger]

func init() {
	_ = mysql.SetLogger(driverLogger{})
}

// RouteDriverLog sends go-sql-driver's messages to log, at debug level;
// nil drops them. The binary routes them to its log at start; service.New
// routes them to the logger it is given.
func RouteDriverLog(log *slog.Logger) {
	if log != nil {
		log = log.With("component", "mysql-driver")
	}
	driverDest.Store(log)
}

type driverLogger struct{}

func (driverLogger) Print(v ...any) {
	if l := driverDest.Load(); l != nil {
		l.Debug(strings.TrimSpace(fmt.Sprint(v...)))
	}
}
