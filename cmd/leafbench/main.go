// Command leafbench drives any MySQL endpoint with N connections for T
// seconds and prints QPS and latency percentiles: the project's one load
// tool (package loadgen does the work).
//
//	leafbench -dsn 'app:secret@tcp(127.0.0.1:3307)/test' -c 32 -d 10s -q 'SELECT 1'
//	leafbench -dsn ... -q 'SELECT * FROM t WHERE id=?' -arg rand:1:100000 -prepare
//	leafbench -dsn ... -mode exec -q 'INSERT INTO t_{conn} (v) VALUES (?)' -arg seq
//
// {conn} in the query is replaced by the connection's index (0..c-1).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leafproxy/leafproxy/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "leafbench:", err)
		os.Exit(1)
	}
}

type argList []loadgen.ArgSpec

func (a *argList) String() string {
	s := make([]string, len(*a))
	for i, x := range *a {
		s[i] = x.String()
	}
	return strings.Join(s, ",")
}

func (a *argList) Set(v string) error {
	spec, err := loadgen.ParseArg(v)
	if err != nil {
		return err
	}
	*a = append(*a, spec)
	return nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, "; ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func run(ctx context.Context, argv []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("leafbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dsn     = fs.String("dsn", "root@tcp(127.0.0.1:3306)/", "go-sql-driver/mysql DSN of the endpoint")
		conns   = fs.Int("c", 1, "connections, one closed-loop worker each")
		dur     = fs.Duration("d", 10*time.Second, "measured duration")
		warmup  = fs.Duration("warmup", 0, "load run before measuring, not recorded")
		query   = fs.String("q", "SELECT 1", "statement; {conn} is replaced by the connection index")
		prepare = fs.Bool("prepare", false, "server-side prepared statement (COM_STMT_EXECUTE) instead of text")
		mode    = fs.String("mode", "query", "query (read all rows) or exec (no rows; counts affected rows)")
		asJSON  = fs.Bool("json", false, "print the result as one JSON object")
		seed    = fs.Uint64("seed", 0, "seed for rand arguments (0: from the clock)")
		cpuProf = fs.String("cpuprofile", "", "write a CPU profile of the tool to this file")
		args    argList
		inits   stringList
	)
	fs.Var(&args, "arg", "placeholder generator, once per ?: rand:LO:HI, seq[:START], conn, const:VALUE")
	fs.Var(&inits, "init", "statement run once on each connection before the clock starts (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: leafbench -dsn DSN [-c N] [-d T] [-warmup T] [-q SQL] [-arg GEN]... [-prepare] [-mode query|exec] [-json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := loadgen.Config{
		DSN:      *dsn,
		Conns:    *conns,
		Duration: *dur,
		Warmup:   *warmup,
		Query:    *query,
		Args:     args,
		Prepare:  *prepare,
		Mode:     loadgen.Mode(*mode),
		Init:     inits,
		Seed:     *seed,
	}
	if strings.Contains(*query, "{conn}") {
		cfg.QueryFor = func(i int) string { return strings.ReplaceAll(*query, "{conn}", strconv.Itoa(i)) }
	}
	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	printText(stdout, res)
	return nil
}

func printText(w io.Writer, r loadgen.Result) {
	proto := "text"
	if r.Prepare {
		proto = "prepared"
	}
	l := r.Latency
	fmt.Fprintf(w, "query     %s\n", r.Query)
	fmt.Fprintf(w, "mode      %s, %s protocol, %d connections, %s measured\n", r.Mode, proto, r.Conns, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "requests  %d  errors %d  rows %d\n", r.Requests, r.Errors, r.Rows)
	fmt.Fprintf(w, "QPS       %.1f  rows/s %.1f\n", r.QPS, r.RowsPerSec)
	fmt.Fprintf(w, "latency   p50 %s  p99 %s  p999 %s  max %s  mean %s\n",
		fmtDur(l.P50), fmtDur(l.P99), fmtDur(l.P999), fmtDur(l.Max), fmtDur(l.Mean))
	if r.Requests > 0 {
		// How much CPU the tool itself burns per request: if this is close
		// to the cores available divided by QPS, the tool is the bottleneck.
		fmt.Fprintf(w, "client    %.1f%% of one core, %s CPU per request\n",
			100*r.ProcessCPU.Seconds()/r.Elapsed.Seconds(), fmtDur(r.ProcessCPU/time.Duration(r.Requests)))
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.1fus", float64(d)/1e3)
	}
}
