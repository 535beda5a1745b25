package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeContents: the README's table of contents lists every section
// (## heading), in order, with the anchor GitHub gives it, and every
// link to a section of the README points at one that exists.
func TestReadmeContents(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	anchor := func(h string) string {
		a := regexp.MustCompile(`[^\w\- ]`).ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), "")
		return strings.ReplaceAll(a, " ", "-")
	}
	var want []string
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(#{2,4}) (.+)$`).FindAllStringSubmatch(s, -1) {
		anchors[anchor(m[2])] = true
		if m[1] == "##" {
			want = append(want, "["+m[2]+"](#"+anchor(m[2])+")")
		}
	}
	line := regexp.MustCompile(`(?m)^\*\*Contents\*\*: (.+)$`).FindStringSubmatch(s)
	if line == nil {
		t.Fatal("README has no **Contents**: line")
	}
	if got := strings.Split(line[1], " · "); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("contents\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(s, -1) {
		if !anchors[m[1]] {
			t.Errorf("link to #%s: no such section", m[1])
		}
	}
	// The reference parts moved to docs/ link back to README sections and
	// to files: those must exist too.
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\]\(\.\./README\.md#([^)]+)\)`).FindAllStringSubmatch(string(b), -1) {
			if !anchors[m[1]] {
				t.Errorf("%s: link to README.md#%s: no such section", filepath.Base(d), m[1])
			}
		}
		for _, m := range regexp.MustCompile(`\]\(([^)#:]+\.(?:md|go|yaml|sh|yml|json))(?:#[^)]*)?\)`).FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(d), m[1])); err != nil {
				t.Errorf("%s: link to %s: no such file", filepath.Base(d), m[1])
			}
		}
	}
}
