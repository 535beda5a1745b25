package config

import (
	"fmt"
	"maps"
	"net"
	"slices"
)

// validateIDAPI checks the id_api section: an address, and tokens each
// with a name, a token of at least MinTokenLength characters and tags,
// when the API is on.
func (c *Config) validateIDAPI(add func(key, format string, a ...any)) {
	a := &c.IDAPI
	if a.Listen == "" {
		return // off: the tokens are not used
	}
	if _, _, err := net.SplitHostPort(a.Listen); err != nil {
		add("id_api.listen", "%q is not host:port (empty disables the HTTP ID API)", a.Listen)
	}
	if len(a.Tokens) == 0 {
		add("id_api.tokens", "none: every request would be refused (401); list at least one {name, token (or token_env, token_file), tags}")
	}
	names := map[string]bool{}
	secrets := map[string]int{}
	for i, t := range a.Tokens {
		key := fmt.Sprintf("id_api.tokens[%d]", i)
		switch {
		case t.Name == "":
			add(key+".name", "empty: name the caller (the audit log shows it)")
		case names[t.Name]:
			add(key+".name", "%q listed twice", t.Name)
		}
		names[t.Name] = true
		switch {
		case t.Token == "" && t.TokenEnv == "" && t.TokenFile == "":
			add(key+".token", "no token: set token, token_env or token_file")
		case t.Token == "":
			// ResolveSecrets reported why the env or file gave none.
		case len(t.Token) < MinTokenLength:
			add(key+".token", "%d characters: a token must have at least %d (e.g. openssl rand -hex 32)", len(t.Token), MinTokenLength)
		default:
			if j, dup := secrets[t.Token]; dup {
				add(key+".token", "the same token as id_api.tokens[%d]: give each caller its own", j)
			}
			secrets[t.Token] = i
		}
		if len(t.Tags) == 0 {
			add(key+".tags", "none: list the tags this token may use, or [\"*\"] for every tag")
		}
		for j, tag := range t.Tags {
			_, declared := c.Sequences.Tags[tag]
			switch {
			case tag == "":
				add(fmt.Sprintf("%s.tags[%d]", key, j), "empty")
			case declared || tag == "*" || ruleTag(c, tag):
			default:
				// A name one typo away from a declared tag is a typo.
				if near := suggest(tag, slices.Sorted(maps.Keys(c.Sequences.Tags))); near != "" {
					add(fmt.Sprintf("%s.tags[%d]", key, j), "%q is not declared in sequences.tags (did you mean %q?)", tag, near)
				}
			}
		}
	}
}

// ruleTag says whether a table rule names tag.
func ruleTag(c *Config, tag string) bool {
	for _, t := range c.Tables {
		if t.Tag == tag {
			return true
		}
	}
	return false
}
