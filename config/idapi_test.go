package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIDAPIConfig(t *testing.T) {
	const tok = "0123456789abcdef0123"
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte(tok+"-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEAFPROXY_TEST_API_TOKEN", tok+"-env")
	c, err := Parse([]byte(`
sequences: {tags: {order: {}}}
id_api:
  listen: 127.0.0.1:0
  tokens:
    - {name: a, token: ` + tok + `, tags: [order]}
    - {name: b, token_env: LEAFPROXY_TEST_API_TOKEN, tags: ["*"]}
    - {name: c, token_file: ` + file + `, tags: [order]}
`))
	if err != nil {
		t.Fatal(err)
	}
	// The budget's and the tokens' limits' defaults.
	if a := c.IDAPI; a.MaxConnections != DefaultAPIMaxConnections || a.MaxConnectionsPerHost != DefaultAPIMaxConnectionsPerHost ||
		a.WriteTimeout.D() != DefaultAPIWriteTimeout || a.Tokens[0].Rate != DefaultAPITokenRate || *a.Tokens[0].MaxNewTags != DefaultAPIMaxNewTags {
		t.Errorf("id_api defaults: %+v", a)
	}
	got := []string{c.IDAPI.Tokens[0].Token, c.IDAPI.Tokens[1].Token, c.IDAPI.Tokens[2].Token}
	if got[0] != tok || got[1] != tok+"-env" || got[2] != tok+"-file" {
		t.Fatalf("tokens resolved as %q", got)
	}

	for _, tc := range []struct{ yaml, want string }{
		{"id_api: {listen: nope, tokens: [{name: a, token: " + tok + ", tags: [x]}]}", "id_api.listen:"},
		{"id_api: {listen: '127.0.0.1:1'}", "id_api.tokens: none"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: short, tags: [x]}]}", "id_api.tokens[0].token: 5 characters"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, tags: [x]}]}", "id_api.tokens[0].token: no token"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + ", token_env: X, tags: [x]}]}", "set only one of token, token_env and token_file"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token_env: LEAFPROXY_NOT_SET_ANYWHERE, tags: [x]}]}", "id_api.tokens[0].token_env: the environment variable"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + "}]}", "id_api.tokens[0].tags: none"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + ", tags: [x]}, {name: a, token: " + tok + ", tags: [x]}]}", `id_api.tokens[1].name: "a" listed twice`},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + ", tags: [x]}, {name: b, token: " + tok + ", tags: [x]}]}", "the same token as id_api.tokens[0]"},
		{"sequences: {tags: {order: {}}}\nid_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + ", tags: [ordr]}]}", `did you mean "order"`},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, tokn: x}]}", "tokn"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + ", tags: [x], rate: -1}]}", "id_api.tokens[0].rate: -1"},
		{"id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: " + tok + ", tags: [x], max_new_tags: -2}]}", "id_api.tokens[0].max_new_tags: -2"},
		{"sequences: {wait_timeout: 3s}\nid_api: {listen: '127.0.0.1:1', write_timeout: 2s, tokens: [{name: a, token: " + tok + ", tags: [x]}]}",
			"id_api.write_timeout: 2s: must be longer than sequences.wait_timeout (3s)"},
		{"id_api: {listen: '127.0.0.1:1', max_header_bytes: 100, tokens: [{name: a, token: " + tok + ", tags: [x]}]}", "id_api.max_header_bytes: 100: at least 1024"},
		{"id_api: {listen: '127.0.0.1:1', max_connections: -5, tokens: [{name: a, token: " + tok + ", tags: [x]}]}", "id_api.max_connections: negative"},
		{"sequences: {tags: {order: {}}}\nid_api: {listen: '127.0.0.1:1', leaf_decode_tag: order, tokens: [{name: a, token: " + tok + ", tags: [order]}]}",
			`id_api.leaf_decode_tag: "order" is a segment tag`},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n got %v\nwant %q", tc.yaml, err, tc.want)
		}
	}
	// Off: tokens are not checked.
	if _, err := Parse([]byte("id_api: {tokens: [{name: a}]}")); err != nil {
		t.Errorf("id_api off: %v", err)
	}
}

func TestInlineTokenIsWarnedAbout(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "leafproxy.yaml")
	if err := os.WriteFile(p, []byte("id_api: {listen: '127.0.0.1:1', tokens: [{name: a, token: 0123456789abcdef, tags: ['*']}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	w := c.SecretWarnings()
	if len(w) != 1 || !strings.Contains(w[0], "plaintext token (id_api.tokens[0].token)") {
		t.Fatalf("warnings %q", w)
	}
}
