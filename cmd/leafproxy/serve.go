package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/buildinfo"
	"github.com/leafproxy/leafproxy/service"
)

// serve runs the proxy until ctx ends (SIGINT/SIGTERM), then shuts down
// gracefully within shutdown.grace. SIGHUP (delivered on hup, which run
// registers before anything else) re-reads the configuration with reload
// and applies its users, tables and tags (service.Reload); one received
// during start-up is applied once the proxy runs. A nil hup registers
// its own.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, ls service.Listeners, hup chan os.Signal, reload func() (*config.Config, error)) error {
	bi := buildinfo.Read(version)
	srv, err := service.New(ctx, cfg, log, service.WithVersion(bi.Version))
	if err != nil {
		ls.Close()
		return err
	}
	defer srv.Close() // whatever ServeOn did not stop (it fails before serving)
	log.Info("leafproxy starting", "version", bi.Version, "commit", bi.ShortCommit(), "listen", cfg.Listen, "backend", cfg.Backend.Addr)
	stopHUP := onReload(ctx, srv, log, hup, reload)
	defer stopHUP()
	if err := srv.ServeOn(ctx, ls); err != nil {
		return err
	}
	log.Info("leafproxy stopped")
	return nil
}

// onReload applies the configuration again on every SIGHUP; an invalid one
// is refused and the running one kept. Sessions are not touched.
func onReload(ctx context.Context, srv *service.Service, log *slog.Logger, hup chan os.Signal, reload func() (*config.Config, error)) (stop func()) {
	if hup == nil {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
	}
	startup := len(hup) > 0
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if startup {
					startup = false
					log.Info("received SIGHUP during start-up, reloading the configuration now that the proxy runs")
				} else {
					log.Info("received SIGHUP, reloading the configuration")
				}
				changes, err := srv.ReloadWith(ctx, func() (*config.Config, error) {
					next, err := reload()
					if err == nil {
						for _, w := range next.SecretWarnings() {
							log.Warn(w)
						}
					}
					return next, err
				})
				if err == nil {
					if len(changes) == 0 {
						log.Info("configuration reloaded: nothing changed")
					}
					for _, c := range changes {
						log.Info("configuration reloaded: " + c)
					}
					continue
				}
				log.Error("configuration reload refused, the running configuration stays", "err", oneLineErr(err))
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}

func oneLineErr(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
