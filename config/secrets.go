package config

import (
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// Secrets: a password may be written inline (password), taken from an
// environment variable (password_env: NAME) or from a file (password_file:
// /path, its content less one trailing newline), for the backend's account,
// each user's backend account and the allocation store's DSN. Proxy users
// may give password_hash instead of password: the "*HEX" that MariaDB's and
// MySQL 5.7's SELECT PASSWORD('x') prints, SHA1(SHA1(x)), so the proxy never
// holds the plaintext (mysql_native_password only: see proxy.Account).

// passwordHash matches the mysql_native_password hash form.
var passwordHash = regexp.MustCompile(`^\*[0-9A-Fa-f]{40}$`)

// ParsePasswordHash turns "*HEX" into the 20 bytes of SHA1(SHA1(password)).
func ParsePasswordHash(s string) ([]byte, error) {
	if !passwordHash.MatchString(s) {
		return nil, fmt.Errorf("%q is not a mysql_native_password hash: a * and 40 hex digits, as SELECT PASSWORD('...') prints", s)
	}
	return hex.DecodeString(s[1:])
}

// ResolveSecrets reads every password_env and password_file into the
// password it stands for (once: a second call does nothing), and notes
// which passwords are written inline in the file. Problems name the key.
func (c *Config) ResolveSecrets() []Problem {
	if c.secretsResolved {
		return nil
	}
	c.secretsResolved = true
	c.inlineSecrets, c.secretFiles = nil, nil
	var probs []Problem
	add := func(key, format string, a ...any) {
		probs = append(probs, Problem{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	resolve := func(key string, value *string, env, file string) {
		n := 0
		for _, set := range []bool{*value != "", env != "", file != ""} {
			if set {
				n++
			}
		}
		if n > 1 {
			add(key, "set only one of %s, %s_env and %s_file", last(key), last(key), last(key))
			return
		}
		switch {
		case env != "":
			v, ok := os.LookupEnv(env)
			if !ok {
				add(key+"_env", "the environment variable %s is not set", env)
				return
			}
			*value = v
		case file != "":
			b, err := os.ReadFile(file)
			if err != nil {
				add(key+"_file", "cannot read the %s: %v", secretWord(key), err)
				return
			}
			s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			if strings.ContainsAny(s, "\n") {
				add(key+"_file", "%s holds more than one line: write the %s alone on its line", file, secretWord(key))
				return
			}
			*value = s
			c.secretFiles = append(c.secretFiles, secretFile{key: key + "_file", path: file})
		case *value != "":
			c.inlineSecrets = append(c.inlineSecrets, key)
		}
	}
	resolve("backend.password", &c.Backend.Password, c.Backend.PasswordEnv, c.Backend.PasswordFile)
	for i := range c.Users {
		u := &c.Users[i]
		key := fmt.Sprintf("users[%d]", i)
		if u.Password != "" {
			c.inlineSecrets = append(c.inlineSecrets, key+".password")
			if u.PasswordHash != "" {
				add(key+".password_hash", "set password or password_hash, not both")
			}
		}
		resolve(key+".backend_password", &u.BackendPassword, u.BackendPasswordEnv, u.BackendPasswordFile)
	}
	for i := range c.IDAPI.Tokens {
		t := &c.IDAPI.Tokens[i]
		resolve(fmt.Sprintf("id_api.tokens[%d].token", i), &t.Token, t.TokenEnv, t.TokenFile)
	}
	s := &c.Sequences
	if s.StorePasswordEnv != "" || s.StorePasswordFile != "" {
		if !s.Store.Set() {
			add("sequences.store_password", "sequences.store is empty: the store then uses the backend's account (backend.password_env / backend.password_file)")
		}
		// One account on every node of the store: the password is read
		// once and given to each DSN (in a copy: the list may be shared
		// with a copy of this Config).
		s.Store = append(StoreList(nil), s.Store...)
		var pw string
		read := false
		for i, dsn := range s.Store {
			mc, err := mysql.ParseDSN(dsn)
			if err != nil {
				continue // Validate reports the DSN.
			}
			if !read {
				pw, read = mc.Passwd, true
				resolve("sequences.store_password", &pw, s.StorePasswordEnv, s.StorePasswordFile)
			}
			if pw != mc.Passwd {
				mc.Passwd = pw
				s.Store[i] = mc.FormatDSN()
			}
		}
	} else {
		for _, dsn := range s.Store {
			if mc, err := mysql.ParseDSN(dsn); err == nil && mc.Passwd != "" {
				c.inlineSecrets = append(c.inlineSecrets, "sequences.store")
				break
			}
		}
	}
	return probs
}

// secretWord is what a secret key holds: a password or a token.
func secretWord(key string) string {
	if strings.HasSuffix(key, ".token") {
		return "token"
	}
	return "password"
}

func last(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// secretFile is a password_file that was read.
type secretFile struct{ key, path string }

// SecretWarnings lists the files holding a plaintext password (the
// configuration file when a password is written in it, every
// password_file) that others may read: readable by everyone, or by a group
// the proxy is not in (a file of root's in the proxy's own group, mode
// 0640, as docs/leafproxy.service installs it, is fine).
func (c *Config) SecretWarnings() []string {
	var out []string
	check := func(path, holds, fix string) {
		st, err := os.Stat(path)
		if err != nil {
			return
		}
		mode := st.Mode().Perm()
		who := ""
		switch {
		case mode&0o004 != 0:
			who = "everyone"
		case mode&0o040 != 0 && !inGroup(st):
			who = "its group, which leafproxy is not in,"
		default:
			return
		}
		out = append(out, fmt.Sprintf("%s holds %s and is readable by %s (mode %04o): %s", path, holds, who, mode, fix))
	}
	if c.Path != "" && len(c.inlineSecrets) > 0 {
		words := map[string]bool{}
		for _, k := range c.inlineSecrets {
			words[secretWord(k)] = true
		}
		word := "password"
		switch {
		case words["token"] && words["password"]:
			word = "password and token"
		case words["token"]:
			word = "token"
		}
		fix := "chmod o-r,g-r it (or give it to leafproxy's group, mode 0640), or move the passwords to *_file / *_env keys (users: password_hash)"
		if word == "token" {
			fix = "chmod o-r,g-r it (or give it to leafproxy's group, mode 0640), or move the tokens to token_file / token_env"
		}
		check(c.Path, "a plaintext "+word+" ("+strings.Join(c.inlineSecrets, ", ")+")", fix)
	}
	for _, f := range c.secretFiles {
		check(f.path, "a "+secretWord(strings.TrimSuffix(f.key, "_file"))+" ("+f.key+")", "chmod 0600 it (or 0640 in leafproxy's group)")
	}
	return out
}

// inGroup says whether the file's group is one of the process's groups.
func inGroup(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	if int(sys.Gid) == os.Getegid() {
		return true
	}
	groups, _ := os.Getgroups()
	for _, g := range groups {
		if int(sys.Gid) == g {
			return true
		}
	}
	return false
}
