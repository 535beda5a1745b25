package config

import "strings"

// Reload says what a configuration reload (SIGHUP; service.Reload) does
// with a key's new value.
type Reload string

const (
	// ReloadYes: applied to the running proxy (without dropping
	// sessions).
	ReloadYes Reload = "yes"
	// ReloadNo: reported as changed and not applied; a restart picks it
	// up.
	ReloadNo Reload = "no"
	// ReloadPart: a section some of whose keys are applied (ReloadYes)
	// and the others not.
	ReloadPart Reload = "in part"
)

// reloadable are the keys a reload applies, each with everything under
// it: the accounts, the table rules, the tags (a new segment tag; a new
// snowflake tag, another generator or layout for a tag are refused: they
// need a restart) and the ID API's tokens (while the API runs). Every
// other key needs a restart. service's reload applies exactly these
// (its TestReloadAppliesReloadableKeys), and docs/configuration.md says
// so key by key (TestConfigurationReference).
var reloadable = []string{"users", "admins", "tables", "sequences.tags", "id_api.tokens"}

// ReloadableKeys lists the keys a reload applies, each with everything
// under it.
func ReloadableKeys() []string { return append([]string(nil), reloadable...) }

// Reloadability says what a reload does with key, a path as KeyPaths
// lists it (users[].name, sequences.tags.*.step).
func Reloadability(key string) Reload {
	for _, r := range reloadable {
		if key == r || strings.HasPrefix(key, r+".") || strings.HasPrefix(key, r+"[") {
			return ReloadYes
		}
	}
	for _, r := range reloadable {
		if strings.HasPrefix(r, key+".") {
			return ReloadPart
		}
	}
	return ReloadNo
}
