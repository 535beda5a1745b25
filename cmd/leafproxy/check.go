package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/service"
)

// runCheck is `leafproxy check`: the configuration (already loaded and
// valid) tried against its servers. Exit 0 all good, 1 problems found.
func runCheck(ctx context.Context, cfg *config.Config, path string, stdout, stderr io.Writer) int {
	where := path
	if where == "" {
		where = "the built-in defaults"
	}
	for _, w := range cfg.SecretWarnings() {
		fmt.Fprintf(stderr, "leafproxy check: warning: %s\n", w)
	}
	findings := service.CheckConfig(ctx, cfg)
	printCoverage(ctx, cfg, stdout)
	if len(findings) == 0 {
		fmt.Fprintf(stdout, "leafproxy check: %s is valid; the backend %s and the allocation store accept their logins, and every table rule's tag exists or is declared\n",
			where, cfg.Backend.Addr)
		return 0
	}
	if len(findings) == 1 {
		fmt.Fprintf(stderr, "leafproxy check: %s: %s\n", where, findings[0])
		return 1
	}
	fmt.Fprintf(stderr, "leafproxy check: %s has %d problems:\n", where, len(findings))
	for _, f := range findings {
		fmt.Fprintf(stderr, "  %s\n", f)
	}
	return 1
}

// prepareServe does what serve must do before any start-up work: warn
// about readable secrets, bind the client and metrics listeners (an
// address that cannot be served exits 2), and run check's probes: a
// refused login or an undeclared tag exits 2 (restarting cannot fix the
// file; the systemd unit does not restart on 2), a server that does not
// answer is a warning (the proxy starts and serves once it is up).
func prepareServe(ctx context.Context, cfg *config.Config, log *slog.Logger, stderr io.Writer) (ls service.Listeners, code int) {
	for _, w := range cfg.SecretWarnings() {
		log.Warn(w)
	}
	ls, err := service.Listen(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "leafproxy serve: %v\n", err)
		return service.Listeners{}, 2
	}
	var fatal []service.Finding
	for _, f := range service.CheckConfig(ctx, cfg) {
		if f.Unreachable {
			log.Warn("start-up check: not reachable now; starting anyway", "key", f.Key, "err", f.Msg)
			continue
		}
		if f.Table {
			continue // logged with the rules' tables at start
		}
		fatal = append(fatal, f)
	}
	if len(fatal) == 0 {
		return ls, 0
	}
	ls.Close()
	for _, f := range fatal {
		fmt.Fprintf(stderr, "leafproxy serve: %s\n", f)
	}
	fmt.Fprintf(stderr, "leafproxy serve: nothing started: fix the configuration (leafproxy check --config FILE lists every problem)\n")
	return service.Listeners{}, 2
}

// printCoverage writes what each pattern rule fills and leaves alone on
// the backend (nothing when it cannot be read: CheckConfig says why).
func printCoverage(ctx context.Context, cfg *config.Config, w io.Writer) {
	cov, err := service.ReadRuleCoverage(ctx, cfg)
	if err != nil {
		return
	}
	for _, c := range cov {
		if !c.Pattern {
			continue
		}
		fmt.Fprintf(w, "leafproxy check: tables[%d] %q fills %d table(s)", c.Index, c.Table, len(c.Filled))
		for i, t := range c.Filled {
			sep := ", "
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(w, "%s%s", sep, t)
			if c.Tags[i] != c.Table && strings.HasPrefix(c.Tags[i], cfg.Tables[c.Index].Tag+".") {
				fmt.Fprintf(w, " (tag %s)", c.Tags[i])
			}
		}
		fmt.Fprintln(w)
		for _, l := range c.LeftAlone {
			fmt.Fprintf(w, "leafproxy check: tables[%d] %q leaves %s alone: %s\n", c.Index, c.Table, l.Table, l.Why)
		}
	}
}
