package service

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/leafproxy/leafproxy/allocator"
	"github.com/leafproxy/leafproxy/config"
)

// Reload applies a new configuration's users, tables and sequence tags to
// the running proxy without dropping sessions (SIGHUP). New logins use the
// new users at once; statements planned from now on use the new table rules;
// new segment tags are created in the store (above the keys of their rule
// tables). Anything else that changed (listen, backend, limits, snowflake
// settings, ...) needs a restart and is reported in the result, not applied.
// A configuration that would change what a running tag generates (its
// generator, or a new snowflake tag) is
// refused as a whole, as is one that fails validation: the old one stays.
// The outcome shows in the metrics (leafproxy_config_last_reload_*).
func (s *Service) Reload(ctx context.Context, next *config.Config) (changes []string, err error) {
	changes, err = s.reload(ctx, next)
	s.reloads.note(err)
	return changes, err
}

// ReloadWith is Reload of the configuration load returns (SIGHUP: the
// file read again); a file that cannot be loaded is a refused reload too.
func (s *Service) ReloadWith(ctx context.Context, load func() (*config.Config, error)) ([]string, error) {
	next, err := load()
	if err != nil {
		s.reloads.note(err)
		return nil, err
	}
	return s.Reload(ctx, next)
}

func (s *Service) reload(ctx context.Context, next *config.Config) (changes []string, err error) {
	if err := ValidateConfig(next); err != nil {
		return nil, err
	}
	nextAlloc, err := AllocatorConfig(next)
	if err != nil {
		return nil, err
	}
	cur := s.current()
	if err := checkTagChanges(cur, next); err != nil {
		return nil, err
	}
	// Names compare as the backend does: read again (the backend may have
	// been down at start), else as before.
	s.mu.Lock()
	lowerCaseTableNames := s.lowerCaseTableNames
	s.mu.Unlock()
	bn := readBackendNames(ctx, s.health.backend, next, lowerCaseTableNames)
	rs, err := bn.rules(next)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	if err := createNewTags(ctx, cur, next, &nextAlloc); err != nil {
		return nil, err
	}

	// ID API tokens apply at once while the API runs and stays configured
	// (a changed or emptied id_api.listen needs a restart, tokens too).
	tokens := s.IDAPI != nil && next.IDAPI.Listen != ""
	changes = reloadChanges(cur, next, tokens)

	// Apply: accounts, rules, the configured-tags view.
	s.Proxy.SetUsers(Accounts(next.Users))
	s.Proxy.SetAdmins(next.Admins)
	s.Engine.SetRules(rs)
	s.views.refresh(ctx) // the views over the rule tables in force
	if tokens {
		s.IDAPI.SetTokens(IDAPITokens(next))
	}
	s.mu.Lock()
	s.lowerCaseTableNames = bn.lowerCaseTableNames
	s.coverage = bn.coverage
	s.mu.Unlock()
	bn.log(s.log, next)
	applied := *cur
	takeReloadable(&applied, next, tokens)
	appliedAlloc, err := AllocatorConfig(&applied)
	if err != nil {
		return nil, err
	}
	s.live.Store(&applied)
	s.liveAlloc.Store(&appliedAlloc)
	s.Sequences.SetRules(appliedAlloc.Rules) // which tags are per_table tags
	// The rules may name other tables, or the tables other types: the
	// engine and the runway read the key columns again now.
	s.Engine.ForgetColumns()
	s.Runway.Invalidate()

	// What a restart would pick up.
	restart := *next
	takeReloadable(&restart, cur, tokens)
	restart.Path = cur.Path
	for _, f := range changedKeys(*cur, restart) {
		changes = append(changes, f+": needs a restart, not applied")
	}
	return changes, nil
}

// checkTagChanges refuses a reload that changes what only a restart may:
// a tag's generator, a snowflake tag's layout, a new snowflake tag.
func checkTagChanges(cur, next *config.Config) error {
	for name, t := range next.Sequences.Tags {
		old, ok := cur.Sequences.Tags[name]
		switch {
		case ok && old.Generator != t.Generator:
			return fmt.Errorf("sequences.tags.%s.generator: changing %s to %s needs a restart (IDs already issued must not be repeated)", name, old.Generator, t.Generator)
		case ok && t.Generator == "snowflake" && old.TagLayout != t.TagLayout:
			return fmt.Errorf("sequences.tags.%s: a snowflake tag's layout cannot change while it runs (IDs of two layouts can collide; "+
				"the store records the tag's layout and refuses another at start): use a new tag", name)
		case !ok && t.Generator == "snowflake":
			return fmt.Errorf("sequences.tags.%s: a new snowflake tag needs a restart (tags are routed to their generator at start)", name)
		}
	}
	return nil
}

// createNewTags creates in the store, as init would, the tags a reload
// adds (new segment tags, and tags of new or changed table rules),
// bounded by 30 seconds.
func createNewTags(ctx context.Context, cur, next *config.Config, nextAlloc *allocator.Config) error {
	var added []string
	for name, t := range next.Sequences.Tags {
		if _, ok := cur.Sequences.Tags[name]; !ok && t.Generator != "snowflake" {
			added = append(added, name)
		}
	}
	if len(added) > 0 || !reflect.DeepEqual(cur.Tables, next.Tables) {
		// New tags (and tags of new rules) are created as init would.
		ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := allocator.InitStore(ictx, nextAlloc, nil)
		cancel()
		if err != nil {
			return fmt.Errorf("create the new tags in the store: %w", err)
		}
	}
	return nil
}

// reloadChanges lists what a reload from cur to next changes: users,
// admins, table rules, ID API tokens (when tokens: the API runs and stays
// configured) and tags, and the segment steps it leaves as they are.
func reloadChanges(cur, next *config.Config, tokens bool) (changes []string) {
	changes = append(changes, diffNames("user", names(cur.Users), names(next.Users))...)
	changes = append(changes, diffNames("admin", cur.Admins, next.Admins)...)
	for _, u := range next.Users {
		for _, o := range cur.Users {
			if o.Name == u.Name && o != u {
				changes = append(changes, fmt.Sprintf("user %q changed", u.Name))
			}
		}
	}
	changes = append(changes, diffNames("table rule", ruleNames(cur.Tables), ruleNames(next.Tables))...)
	if tokens {
		changes = append(changes, diffNames("id_api token", apiTokenNames(cur.IDAPI.Tokens), apiTokenNames(next.IDAPI.Tokens))...)
		for _, t := range next.IDAPI.Tokens {
			for _, o := range cur.IDAPI.Tokens {
				if o.Name == t.Name && !reflect.DeepEqual(o, t) {
					changes = append(changes, fmt.Sprintf("id_api token %q changed", t.Name))
				}
			}
		}
	}
	changes = append(changes, diffNames("tag", slices.Collect(maps.Keys(cur.Sequences.Tags)), slices.Collect(maps.Keys(next.Sequences.Tags)))...)
	for _, name := range slices.Sorted(maps.Keys(next.Sequences.Tags)) {
		t, old := next.Sequences.Tags[name], cur.Sequences.Tags[name]
		if _, ok := cur.Sequences.Tags[name]; ok && t.Step != old.Step && t.Generator == "segment" {
			changes = append(changes, fmt.Sprintf("sequences.tags.%s.step changed (%d -> %d): not applied to the tag, whose row in leaf_alloc keeps its step "+
				"(step is what init gives a tag it creates); to change it: UPDATE leaf_alloc SET step = %d WHERE biz_tag = '%s'",
				name, old.Step, t.Step, t.Step, strings.ReplaceAll(name, "'", "''")))
		}
	}
	return changes
}

// takeReloadable copies into dst the keys a reload applies
// (config.ReloadableKeys: the accounts, the table rules, the tags, and the
// ID API's tokens when tokens says the API runs) from src.
func takeReloadable(dst *config.Config, src *config.Config, tokens bool) {
	dst.Users, dst.Admins, dst.Tables, dst.Sequences.Tags = src.Users, src.Admins, src.Tables, src.Sequences.Tags
	if tokens {
		dst.IDAPI.Tokens = src.IDAPI.Tokens
	}
}

// current is the configuration in force (as reloaded).
func (s *Service) current() *config.Config {
	if s.live != nil {
		if c := s.live.Load(); c != nil {
			return c
		}
	}
	return s.cfg
}

func names(us []config.User) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}

func apiTokenNames(ts []config.APIToken) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func ruleNames(ts []config.Table) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s.%s <- %s", t.Table, t.Column, t.Tag))
	}
	return out
}

// diffNames lists what was added and removed between two name lists.
func diffNames(what string, before, after []string) []string {
	var out []string
	for _, n := range after {
		if !slices.Contains(before, n) {
			out = append(out, fmt.Sprintf("%s %q added", what, n))
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			out = append(out, fmt.Sprintf("%s %q removed", what, n))
		}
	}
	slices.Sort(out)
	return out
}

// changedKeys names every key (as the file writes it: limits.max_connections)
// whose value differs, with the values unless the key holds a secret.
func changedKeys(a, b config.Config) []string {
	var out []string
	var walk func(va, vb reflect.Value, path string)
	walk = func(va, vb reflect.Value, path string) {
		if reflect.DeepEqual(va.Interface(), vb.Interface()) {
			return
		}
		if va.Kind() == reflect.Struct && va.Type() != reflect.TypeFor[config.Duration]() {
			t := va.Type()
			for i := range t.NumField() {
				if !t.Field(i).IsExported() {
					continue
				}
				key := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
				if key == "" || key == "-" {
					continue
				}
				p := key
				if path != "" {
					p = path + "." + key
				}
				walk(va.Field(i), vb.Field(i), p)
			}
			return
		}
		if secretKey(path) {
			out = append(out, path+" changed")
			return
		}
		out = append(out, fmt.Sprintf("%s changed (%s -> %s)", path, show(va), show(vb)))
	}
	walk(reflect.ValueOf(a), reflect.ValueOf(b), "")
	return out
}

// secretKey says a key's value is not to be logged.
func secretKey(path string) bool {
	return strings.Contains(path, "password") || path == "sequences.store" || strings.HasPrefix(path, "id_api.tokens")
}

// show is a value as a person reads it in a log line.
func show(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case config.Duration:
		return x.D().String()
	case *int:
		if x == nil {
			return "unset"
		}
		return fmt.Sprint(*x)
	case string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v.Interface())
}
