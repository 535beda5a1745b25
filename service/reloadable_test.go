package service

import (
	"reflect"
	"strings"
	"testing"

	"github.com/leafproxy/leafproxy/config"
)

// fieldAt is the field of Config at a dotted YAML path (no lists or maps
// on the way).
func fieldAt(t *testing.T, c *config.Config, path string) reflect.Value {
	t.Helper()
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(path, ".") {
		found := false
		for i := range v.NumField() {
			if strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0] == part {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			t.Fatalf("no key %s in config.Config", path)
		}
	}
	return v
}

// TestReloadAppliesReloadableKeys: a reload takes from the new file
// exactly the keys config.ReloadableKeys lists (what
// docs/configuration.md marks reloadable): each of them changed is
// applied, a key outside them is left for a restart.
func TestReloadAppliesReloadableKeys(t *testing.T) {
	next := config.Default()
	for _, key := range config.ReloadableKeys() {
		f := fieldAt(t, next, key)
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf("k"), reflect.Zero(f.Type().Elem()))
			f.Set(m)
		default:
			t.Fatalf("reloadable key %s: a %s, set it here", key, f.Kind())
		}
	}
	next.Listen = "127.0.0.1:1"
	applied := config.Default()
	takeReloadable(applied, next, true)
	changed := changedKeys(*applied, *next)
	for _, c := range changed {
		if key := strings.Fields(c)[0]; config.Reloadability(key) == config.ReloadYes {
			t.Errorf("reloadable key not applied: %s", c)
		}
	}
	if len(changed) != 1 || !strings.HasPrefix(changed[0], "listen changed") {
		t.Errorf("left for a restart: %q, want only listen", changed)
	}
	for _, key := range config.ReloadableKeys() {
		if !reflect.DeepEqual(fieldAt(t, applied, key).Interface(), fieldAt(t, next, key).Interface()) {
			t.Errorf("reloadable key %s not taken from the new file", key)
		}
	}
}
