// Command leafproxy is the MySQL-protocol proxy that fills primary keys with
// globally unique IDs. Subcommands: serve, init, demo, version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/leafproxy/leafproxy/allocator/snowflake"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/buildinfo"
	"github.com/leafproxy/leafproxy/service"
)

// version may be set at build time with -ldflags "-X main.version=...";
// empty, it is the released version (buildinfo.Release, CHANGELOG.md's
// newest). The commit and its date come from the Go build info
// (internal/buildinfo).
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand: its flags and what it says about itself.
type command struct {
	name    string
	summary string // one line for the overview
	about   string // paragraph for its own --help
	flags   []string
	// flagText replaces flagHelp's wording of a flag for this command.
	flagText map[string][2]string
	// passThrough: the command takes any arguments (demo passes them on).
	passThrough bool
}

// flagHelp documents every flag once; each command lists the ones it takes.
var flagHelp = map[string][2]string{
	"config":  {"FILE", "YAML configuration file (every key: leafproxy.example.yaml); without it, built-in defaults"},
	"listen":  {"ADDR", "host:port clients connect to; overrides listen in the file"},
	"backend": {"ADDR", "host:port of the MySQL/MariaDB backend; overrides backend.addr in the file"},
}

// help is the placeholder and wording of flag f for command c.
func (c *command) help(f string) [2]string {
	if h, ok := c.flagText[f]; ok {
		return h
	}
	return flagHelp[f]
}

var commands = []command{
	{name: "serve", flags: []string{"config", "listen", "backend"},
		summary: "run the proxy",
		about: `Runs the proxy until SIGTERM or SIGINT, then stops accepting clients and gives
statements in flight shutdown.grace to finish. Before anything else it binds listen
and metrics.listen and runs check's probes: an address it cannot listen on, a refused
backend or store login or an undeclared tag exits 2 (a server that does not answer is
a warning: the proxy starts and serves once it is up). At start it creates the allocation
store's database, leaf_alloc, leaf_worker and configured tags when missing (as init
does); a snowflake layout other than the one the store records exits 2. With
metrics.listen set it also serves /metrics, a status page (/), /status.json,
/healthz, /livez and /readyz. SIGHUP re-reads the config file and applies its users, tables and tags
without dropping sessions (other changes need a restart; an invalid file is refused
and the running configuration kept; one received during start-up is applied once the
proxy runs). Logs go to stderr.`},
	{name: "check", flags: []string{"config", "listen", "backend"},
		summary: "validate a configuration and try its backend and store logins (as haproxy -c, nginx -t)",
		about: `Validates the configuration, then tries what serve would need, changing nothing:
the backend login (backend.user), each users[].backend_user login, the allocation
store's login (sequences.store), and that every tables[].tag is declared in
sequences.tags or already in leaf_alloc (unless sequences.auto_create). Every problem
is printed, each naming the key to fix; files holding a plaintext password that
others may read are warned about. Exit status: 0 all good, 1 a problem found
against the servers, 2 the configuration itself is invalid. serve runs the same
checks before it starts anything; docs/leafproxy.service runs check before
sending SIGHUP, so that systemctl reload reports a refused file.`},
	{name: "init", flags: []string{"config", "backend"},
		summary: "create the allocation store: database, leaf_alloc, leaf_worker, configured tags",
		about: `Creates the allocation store's database (leafproxy on the backend, or the one
sequences.store names), the leaf_alloc, leaf_worker and leaf_snowflake_layout tables
and every configured segment tag that is missing, then exits. When a tag uses
snowflake, it records the snowflake layout in the store, or checks it against the
recorded one (a difference exits 2). Idempotent: existing rows keep their max_id.`},
	{name: "demo", passThrough: true,
		summary: "how to try the proxy with no MySQL installed (go run ./cmd/leafproxy-demo)",
		about: `Prints how to run the demo, a program of its own (cmd/leafproxy-demo): an
embedded, in-memory MySQL-compatible server (go-mysql-server) with example tables
and tags, the proxy in front of it, on loopback. This binary does not carry that
server. Arguments are passed on to the demo's command line (--listen PORT,
--backend-port PORT). What works on the embedded backend: README, Demo.`},
	{name: "version", summary: "print the version, commit and commit date",
		about: `Prints the version, the commit the binary was built from and that commit's
date (stamped by the Go toolchain when building from a git checkout), the Go
version and the platform, then exits.`},
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprint(w, "leafproxy: a MySQL-protocol proxy that gives tables globally unique primary keys\n\nusage:\n")
	for _, c := range commands {
		line := "  leafproxy " + c.name
		for _, f := range c.flags {
			line += fmt.Sprintf(" [--%s %s]", f, c.help(f)[0])
		}
		if c.passThrough {
			line += " [ARGS...]"
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, c.summary)
	}
	fmt.Fprint(w, "\n'leafproxy COMMAND --help' describes a command and its flags.\n")
}

func commandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: leafproxy %s", c.name)
	for _, f := range c.flags {
		fmt.Fprintf(w, " [--%s %s]", f, c.help(f)[0])
	}
	if c.passThrough {
		fmt.Fprint(w, " [ARGS...]")
	}
	fmt.Fprintf(w, "\n\n%s\n", c.about)
	if c.passThrough {
		return
	}
	if len(c.flags) == 0 {
		fmt.Fprint(w, "\nIt takes no flags.\n")
		return
	}
	fmt.Fprint(w, "\nflags:\n")
	for _, f := range c.flags {
		h := c.help(f)
		fmt.Fprintf(w, "  --%-18s %s\n", f+" "+h[0], h[1])
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "--version" || args[0] == "-v" {
		args[0] = "version"
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		return help(args[1:], stdout, stderr)
	}
	var hup chan os.Signal
	if args[0] == "serve" {
		// SIGHUP is caught from serve's first instruction: its default
		// action ends the process, and a reload (systemctl reload) may
		// come while serve is still starting, its sockets already
		// accepting. One that arrives before the proxy runs waits here
		// and is applied once it does (onReload).
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	cmd := findCommand(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "leafproxy: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if cmd.passThrough {
		if len(args) > 1 && (args[1] == "--help" || args[1] == "-h" || args[1] == "-help") {
			commandUsage(stdout, cmd)
			return 0
		}
		return runDemo(args[1:], stdout)
	}
	get, code, ok := parseFlags(cmd, args[1:], stdout, stderr)
	if !ok {
		return code
	}
	if cmd.name == "version" {
		fmt.Fprintln(stdout, buildinfo.Read(version))
		return 0
	}
	cfg, err := loadConfig(get("config"), get("listen"), get("backend"))
	if err != nil {
		printConfigError(stderr, get("config"), err)
		return 2
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// go-sql-driver's own lines (a dropped connection's "unexpected EOF")
	// never reach the output unfiltered: check and init report what they
	// find themselves; serve logs them at debug level.
	service.RouteDriverLog(nil)
	switch cmd.name {
	case "check":
		return runCheck(ctx, cfg, get("config"), stdout, stderr)
	case "serve":
		log := newLogger(cfg, stderr)
		service.RouteDriverLog(log)
		ls, code := prepareServe(ctx, cfg, log, stderr)
		if code != 0 {
			return code
		}
		stop := onSignals(cancel, func(sig os.Signal, n int) {
			if n == 1 {
				log.Info("received "+service.SignalName(sig)+", shutting down", "signal", service.SignalName(sig),
					"grace", cfg.Shutdown.Grace.D().String())
				return
			}
			log.Warn("received "+service.SignalName(sig)+" again, exiting without waiting for statements in flight",
				"signal", service.SignalName(sig))
			exit(1)
		})
		defer stop()
		err = serve(ctx, cfg, log, ls, hup, func() (*config.Config, error) {
			return loadConfig(get("config"), get("listen"), get("backend"))
		})
	case "init":
		stop := onSignals(cancel, func(sig os.Signal, n int) {
			fmt.Fprintf(stderr, "leafproxy init: received %s, stopping\n", service.SignalName(sig))
		})
		defer stop()
		err = initStore(ctx, cfg, stdout)
	}
	return exitCode(stderr, cmd.name, err)
}

// help prints the usage (help) or a command's (help <command>) and
// returns the exit code: 2 for an unknown command.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if c := findCommand(args[0]); c != nil {
			commandUsage(stdout, c)
			return 0
		}
		fmt.Fprintf(stderr, "leafproxy: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	usage(stdout)
	return 0
}

// parseFlags parses cmd's flags in args. get reads a flag's value ("" when
// unset or not cmd's). !ok: the command does not run and code is the exit
// code (0 after --help, 2 for a bad flag or an argument).
func parseFlags(cmd *command, args []string, stdout, stderr io.Writer) (get func(string) string, code int, ok bool) {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and help are printed below
	vals := map[string]*string{}
	for _, f := range cmd.flags {
		vals[f] = fs.String(f, "", cmd.help(f)[1])
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(stdout, cmd)
			return nil, 0, false
		}
		fmt.Fprintf(stderr, "leafproxy %s: %v\n\n", cmd.name, err)
		commandUsage(stderr, cmd)
		return nil, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "leafproxy %s: unexpected argument %q\n\n", cmd.name, fs.Arg(0))
		commandUsage(stderr, cmd)
		return nil, 2, false
	}
	return func(name string) string {
		if v := vals[name]; v != nil {
			return *v
		}
		return ""
	}, 0, true
}

// exitCode reports err of command name (none after a cancel: a signal
// stopped it) and returns the process's exit code: 0, 1, or 2 when the
// config contradicts the store and restarting cannot help (systemd's
// RestartPreventExitStatus=2).
func exitCode(stderr io.Writer, name string, err error) int {
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "leafproxy %s: %v\n", name, err)
		if errors.Is(err, snowflake.ErrLayoutMismatch) {
			return 2
		}
		return 1
	}
	return 0
}

// exit ends the process on a second signal (a variable for tests).
var exit = os.Exit

// onSignals calls cancel on the first SIGINT or SIGTERM and tell on each,
// with a count. The returned stop ends the watching.
func onSignals(cancel func(), tell func(sig os.Signal, n int)) (stop func()) {
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			select {
			case sig := <-sigc:
				tell(sig, n)
				if n == 1 {
					cancel()
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigc)
		close(done)
	}
}

// printConfigError prints a configuration's problems one per line.
func printConfigError(w io.Writer, path string, err error) {
	var ce *config.Error
	if !errors.As(err, &ce) {
		fmt.Fprintf(w, "leafproxy: %v\n", err)
		return
	}
	where := "the configuration"
	if path != "" {
		where = path
	}
	if len(ce.Problems) == 1 {
		fmt.Fprintf(w, "leafproxy: %s: %s\n", where, ce.Problems[0])
		return
	}
	fmt.Fprintf(w, "leafproxy: %s has %d problems:\n", where, len(ce.Problems))
	for _, p := range ce.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

func loadConfig(path, listen, backend string) (*config.Config, error) {
	var cfg *config.Config
	if path == "" {
		cfg = config.Default()
	} else {
		var err error
		if cfg, err = service.LoadConfig(path); err != nil {
			return nil, err
		}
	}
	if listen != "" {
		cfg.Listen = listen
	}
	if backend != "" {
		cfg.Backend.Addr = backend
	}
	if err := service.ValidateConfig(cfg); err != nil {
		var ce *config.Error
		if errors.As(err, &ce) {
			for i, p := range ce.Problems {
				switch {
				case p.Key == "listen" && listen != "":
					ce.Problems[i].Key = "--listen"
				case p.Key == "backend.addr" && backend != "":
					ce.Problems[i].Key = "--backend"
				}
			}
		}
		return nil, err
	}
	return cfg, nil
}
