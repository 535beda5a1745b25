package admin

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/leafproxy/leafproxy/allocator/schema"
	"github.com/leafproxy/leafproxy/allocator/segment"
	"github.com/leafproxy/leafproxy/allocator/snowflake"
)

// storeTimeout bounds an admin statement's store work.
const storeTimeout = 10 * time.Second

// description is what the store row of a tag created in SQL says: who,
// from where, how and when.
func (a *Interceptor) description(s session, st stmt) string {
	host := s.RemoteAddr()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	how := "CREATE LEAFPROXY SEQUENCE"
	if st.snowflake {
		how += " ... SNOWFLAKE"
	}
	return fmt.Sprintf("created by %s@%s with %s at %s", s.User(), host, how, a.now().UTC().Format("2006-01-02 15:04:05 UTC"))
}

// declared says how the configuration in force uses tag: the table rules
// filling keys from it, and whether sequences.tags declares it.
func (a *Interceptor) declared(tag string) (rules []string, inTags bool, generator string) {
	cfg := a.config()
	for i, r := range cfg.Rules {
		if r.Tag == tag {
			rules = append(rules, fmt.Sprintf("tables[%d] (%s, column %s)", i, r.Table, r.Column))
		}
	}
	t, inTags := cfg.Tags[tag]
	generator = t.Generator
	if generator == "" && len(rules) > 0 {
		generator = "segment"
	}
	return rules, inTags, generator
}

func exists(tag, kind string) error {
	what := "a segment sequence: a row of leaf_alloc"
	if kind == "snowflake" {
		what = "a snowflake sequence: a row of leaf_snowflake_layout"
	}
	return &mysql.MyError{Code: mysql.ER_TABLE_EXISTS_ERROR, State: "42S01", Message: fmt.Sprintf("Table '%s' already exists (leafproxy: %s)", tag, what)}
}

func notSupported(format string, args ...any) error {
	return &mysql.MyError{Code: mysql.ER_NOT_SUPPORTED_YET, State: "42000", Message: "leafproxy: " + fmt.Sprintf(format, args...)}
}

func (a *Interceptor) create(ctx context.Context, s session, st stmt) (string, error) {
	if err := schema.CheckTag(st.tag); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	_, inTags, gen := a.declared(st.tag)
	if st.snowflake && gen != "" {
		// A configured tag exists by configuration; a snowflake one has
		// its row already, a segment one must not get one.
		if st.ifNotExists {
			return "unchanged", warnOK(ctx, s, mysql.ER_TABLE_EXISTS_ERROR, fmt.Sprintf("Table '%s' already exists", st.tag))
		}
		return "", &mysql.MyError{Code: mysql.ER_TABLE_EXISTS_ERROR, State: "42S01", Message: fmt.Sprintf(
			"Table '%s' already exists (leafproxy: a %s sequence in this proxy's configuration)", st.tag, gen)}
	}
	if !st.snowflake && inTags && gen == "snowflake" {
		return "", notSupported("tag '%s' uses the snowflake generator (sequences.tags.%s), which has no leaf_alloc row", st.tag, st.tag)
	}
	var created bool
	var err error
	if st.snowflake {
		var l snowflake.Layout
		if l, err = a.layout(ctx, st); err != nil {
			return "", err
		}
		created, err = a.idSequences.CreateSnowflake(ctx, st.tag, &l, a.description(s, st))
	} else {
		created, err = a.idSequences.CreateSegment(ctx, st.tag, st.step, st.start, st.maxValue, a.description(s, st))
	}
	if err != nil {
		return "", fmt.Errorf("create sequence '%s': %w", st.tag, err)
	}
	if !created {
		if st.ifNotExists {
			return "unchanged", warnOK(ctx, s, mysql.ER_TABLE_EXISTS_ERROR, fmt.Sprintf("Table '%s' already exists", st.tag))
		}
		kind, err := a.idSequences.TagKind(ctx, st.tag)
		if err != nil {
			return "", err
		}
		return "", exists(st.tag, kind)
	}
	return "created", s.WriteOK(0, 0, 0)
}

// layout is the layout CREATE ... SNOWFLAKE asks for: the store's global
// layout with the named layout's or the given bits, and the given epoch.
// Anything invalid is 1210.
func (a *Interceptor) layout(ctx context.Context, st stmt) (snowflake.Layout, error) {
	l, err := a.idSequences.GlobalLayout(ctx)
	if err != nil {
		return l, fmt.Errorf("read the store's snowflake layout: %w", err)
	}
	what := "Incorrect arguments to CREATE LEAFPROXY SEQUENCE"
	if st.epoch != "" {
		e, err := time.Parse(time.RFC3339, st.epoch)
		if err != nil {
			return l, badArgument(fmt.Sprintf("%s: EPOCH '%s' is not an RFC 3339 time like '2024-01-01T00:00:00Z'", what, st.epoch))
		}
		l.Epoch = e
	}
	switch {
	case st.layout != "":
		nl, ok := snowflake.NamedLayout(st.layout, l.Epoch)
		if !ok {
			return l, badArgument(fmt.Sprintf("%s: LAYOUT %s is not %s or %s (or give (time_bits, worker_bits, sequence_bits))",
				what, st.layout, snowflake.LayoutNameJSSafe, snowflake.LayoutNameDefault))
		}
		l = nl
	case st.hasBits:
		for _, b := range st.bits {
			if b < 0 || b > 63 {
				return l, badArgument(fmt.Sprintf("%s: LAYOUT (%d, %d, %d): bits are 0 to 63", what, st.bits[0], st.bits[1], st.bits[2]))
			}
		}
		l.TimeBits, l.WorkerBits, l.SequenceBits = uint(st.bits[0]), uint(st.bits[1]), uint(st.bits[2])
	}
	if err := l.Validate(); err != nil {
		return l, badArgument(fmt.Sprintf("%s: %v", what, err))
	}
	if sf := a.config().Snowflake; !sf.LeaseWorkerID {
		if id := sf.WorkerID; id > l.MaxWorker() {
			return l, badArgument(fmt.Sprintf("%s: this proxy's fixed snowflake.worker_id %d does not fit %d worker bits (0 to %d)",
				what, id, l.WorkerBits, l.MaxWorker()))
		}
	}
	return l, nil
}

func (a *Interceptor) alter(ctx context.Context, s session, st stmt) (string, error) {
	if err := schema.CheckTag(st.tag); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if _, _, gen := a.declared(st.tag); gen == "snowflake" {
		return "", notSupported("ALTER LEAFPROXY SEQUENCE '%s': the tag uses the snowflake generator (sequences.tags.%s), which has no step and no MAXVALUE", st.tag, st.tag)
	}
	if st.setMax {
		if err := a.idSequences.AlterMaxValue(ctx, st.tag, st.maxValue); err != nil {
			return "", err
		}
	}
	if st.step > 0 {
		if err := a.idSequences.AlterStep(ctx, st.tag, st.step); err != nil {
			return "", err
		}
	}
	return "altered", s.WriteOK(0, 0, 0)
}

func (a *Interceptor) drop(ctx context.Context, s session, st stmt) (string, error) {
	if err := schema.CheckTag(st.tag); err != nil {
		return "", err
	}
	rules, inTags, _ := a.declared(st.tag)
	switch {
	case len(rules) > 0:
		return "", notSupported("cannot drop sequence '%s': table rules fill keys from it: %s; remove them from the configuration (and reload) first",
			st.tag, strings.Join(rules, ", "))
	case inTags:
		return "", notSupported("cannot drop sequence '%s': the configuration declares it (sequences.tags.%s) and would create it again; remove it there (and restart) first",
			st.tag, st.tag)
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	found, err := a.idSequences.Drop(ctx, st.tag)
	if err != nil {
		return "", fmt.Errorf("drop sequence '%s': %w", st.tag, err)
	}
	if !found {
		if st.ifExists {
			return "unchanged", warnOK(ctx, s, segment.ErrCodeUnknownSequence, fmt.Sprintf("Unknown SEQUENCE: '%s'", st.tag))
		}
		return "", &segment.UnknownTagError{Tag: st.tag}
	}
	return "dropped", s.WriteOK(0, 0, 0)
}

// warnOK answers OK with one warning, and leaves that warning (code, msg)
// in the session's backend connection, where the client's SHOW WARNINGS
// goes next: a SIGNAL of SQLSTATE 01000 is a warning, not an error. If the
// backend cannot hold it (an old server), the client still gets its OK.
func warnOK(ctx context.Context, s session, code uint16, msg string) error {
	sig := fmt.Sprintf("SIGNAL SQLSTATE '01000' SET MYSQL_ERRNO = %d, MESSAGE_TEXT = _utf8mb4 X'%s'", code, hex.EncodeToString([]byte(msg)))
	_, _, err := s.BackendExec(ctx, sig)
	if err != nil {
		s.Logger().Debug("could not leave the warning for SHOW WARNINGS on the backend connection", "err", err)
	}
	return s.WriteOK(0, 0, 1)
}
