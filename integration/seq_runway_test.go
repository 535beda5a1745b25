package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafproxy/leafproxy/allocator/runway"
	"github.com/leafproxy/leafproxy/config"
	"github.com/leafproxy/leafproxy/internal/testkit/testdb"
	"github.com/leafproxy/leafproxy/internal/testkit/testwait"
	"github.com/leafproxy/leafproxy/service"
)

// Issue 20, item 4: runway. For each tag, the IDs left before the
// smallest key column filled from it overflows, and when, at the rate of
// the last hour; for a snowflake tag, when its time bits end. Shown in
// SHOW LEAFPROXY SEQUENCES, the status, the metrics, and warned about in
// the log when less than a year is left.

// startLeafOpts is startLeafLog with service options.
func startLeafOpts(t *testing.T, cfg *config.Config, log *slog.Logger, opts ...service.Option) *leaf {
	t.Helper()
	cfg.ApplyDefaults()
	cfg.DeclareRuleTags() // the rules' tags are to be created, as a file would declare them
	if err := service.ValidateConfig(cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	svc, err := service.New(context.Background(), cfg, log, opts...)
	if err != nil {
		t.Fatalf("start leafproxy: %v", err)
	}
	return serveLeaf(t, cfg, svc)
}

// scrape returns the value of metric{tag="tag"} on the service's /metrics
// (false when absent).
func scrape(t *testing.T, lf *leaf, metric, tag string) (float64, bool) {
	t.Helper()
	resp, err := http.Get("http://" + lf.svc.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	prefix := fmt.Sprintf("%s{tag=%q} ", metric, tag)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f, true
		}
	}
	io.Copy(io.Discard, resp.Body)
	return 0, false
}

func TestRunwayNearIntMax(t *testing.T) {
	backend := testdb.Start(t)
	backend.Exec(t, "CREATE DATABASE shop")
	backend.Exec(t, "CREATE TABLE shop.small (id INT PRIMARY KEY, v INT)")
	backend.Exec(t, "CREATE TABLE shop.mid_1 (id INT UNSIGNED PRIMARY KEY, v INT)")
	backend.Exec(t, "CREATE TABLE shop.mid_2 (id BIGINT PRIMARY KEY, v INT)")
	backend.Exec(t, "CREATE TABLE shop.big (id BIGINT PRIMARY KEY, v INT)")
	cfg := layoutConfig(t, backend)
	cfg.Metrics.Listen = "127.0.0.1:0"
	cfg.Sequences.Tags["small"] = config.Tag{Generator: "segment", Step: 10}
	cfg.Tables = []config.Table{
		{Table: "shop.small", Column: "id", Tag: "small"},
		{Table: "shop.mid_*", Column: "id", Tag: "mid"}, // a pattern: INT UNSIGNED and BIGINT tables
		{Table: "shop.big", Column: "id", Tag: "big"},
	}
	var logs testdb.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lf := startLeafOpts(t, cfg, log, service.WithRunwayOptions(runway.Options{Interval: 50 * time.Millisecond, ColumnsEvery: 50 * time.Millisecond}))
	app := lf.open(t, "shop", nil)
	ops := opsDB(t, lf)
	store := backend.Open(t, "leafproxy")
	maxID := func(tag string) int64 {
		var v int64
		if err := store.QueryRow("SELECT max_id FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	// An explicit key near INT's maximum moves the tag past it.
	if _, err := app.Exec("INSERT INTO small (id, v) VALUES (2147483000, 1)"); err != nil {
		t.Fatal(err)
	}
	if m := maxID("small"); m != 2147483001 {
		t.Fatalf("max_id after the explicit key: %d", m)
	}
	testwait.For(t, "ids_left 647 for small", func() bool { return seqRow(t, ops, "small")["ids_left"] == "647" })
	r := seqRow(t, ops, "small")
	if r["limited_by"] != "shop.small.id int(11)" {
		t.Errorf("small: %v", r)
	}
	if mid := seqRow(t, ops, "mid"); mid["ids_left"] != strconv.FormatInt(math.MaxUint32-(maxID("mid")-1), 10) ||
		mid["limited_by"] != "shop.mid_1.id int(10) unsigned" || mid["exhausted_at"] != "NULL" {
		t.Errorf("mid: %v", mid)
	}
	if big := seqRow(t, ops, "big"); big["ids_left"] != strconv.FormatInt(math.MaxInt64-(maxID("big")-1), 10) || big["limited_by"] != "shop.big.id bigint(20)" {
		t.Errorf("big: %v", big)
	}
	web := seqRow(t, ops, "web")
	if left, err := strconv.ParseInt(web["ids_left"], 10, 64); err != nil || left <= 0 || left >= 1<<53 ||
		!strings.HasPrefix(web["exhausted_at"], "2089-09-") || !strings.HasPrefix(web["limited_by"], "layout 41/5/7") {
		t.Errorf("web: %v", web)
	}

	// Rows at a rate: the runway gets a date, under a year away, and the
	// log warns.
	for i := range 30 {
		if _, err := app.Exec("INSERT INTO small (v) VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, "an exhaustion date for small", func() bool { return seqRow(t, ops, "small")["exhausted_at"] != "NULL" })
	r = seqRow(t, ops, "small")
	at, err := time.Parse("2006-01-02 15:04:05", r["exhausted_at"])
	if err != nil || at.Before(time.Now().Add(-time.Minute)) || at.After(time.Now().Add(365*24*time.Hour)) {
		t.Errorf("small at a rate: %v (%v)", r, err)
	}
	if rate, _ := strconv.ParseFloat(r["ids_per_second"], 64); rate <= 0 {
		t.Errorf("small's rate: %v", r)
	}
	testwait.For(t, "the warning", func() bool { return strings.Contains(logs.String(), "runs out of IDs in less than a year") })
	if !strings.Contains(logs.String(), "tag=small") || strings.Contains(logs.String(), "tag=big") {
		t.Errorf("warnings:\n%s", logs.String())
	}

	// Metrics agree with the store.
	testwait.For(t, "metrics", func() bool {
		v, ok := scrape(t, lf, "leafproxy_sequence_ids_left", "small")
		return ok && int64(v) == math.MaxInt32-(maxID("small")-1)
	})
	if v, ok := scrape(t, lf, "leafproxy_sequence_exhausted_timestamp_seconds", "small"); !ok || v < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Errorf("exhausted timestamp of small: %v %v", v, ok)
	}
	if _, ok := scrape(t, lf, "leafproxy_sequence_exhausted_timestamp_seconds", "big"); ok {
		t.Error("an exhaustion timestamp for big, which does not run out at its rate")
	}
	if v, ok := scrape(t, lf, "leafproxy_sequence_exhausted_timestamp_seconds", "web"); !ok || time.Unix(int64(v), 0).Year() != 2089 {
		t.Errorf("exhausted timestamp of web: %v %v", v, ok)
	}

	// The status, and the mariadb CLI.
	for _, ts := range lf.svc.Status(t.Context()).Tags {
		if ts.Tag == "small" && (ts.Runway == nil || !ts.Runway.LessThanAYear || ts.Runway.LimitedBy != "shop.small.id int(11)") {
			t.Errorf("status of small: %+v", ts.Runway)
		}
	}
	cli := cliQuery(t, lf.addr, "ops", "opspw", "SHOW LEAFPROXY SEQUENCES", "--table")
	if !strings.Contains(cli, "ids_left") || !strings.Contains(cli, "exhausted_at") || !strings.Contains(cli, "shop.small.id int(11)") {
		t.Errorf("CLI:\n%s", cli)
	}
	t.Logf("mariadb CLI:\n%s", cli)
}
