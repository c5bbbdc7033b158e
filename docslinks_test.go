package redisync_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches a Markdown link's target; mdHeading a heading line.
var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	mdFence   = regexp.MustCompile("(?s)```.*?```")
)

// mdAnchor is the anchor GitHub gives a heading: lower case, punctuation
// but hyphens and underscores dropped, spaces as hyphens.
func mdAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '—' && r != '–' && r != '→' && r != '×':
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestMarkdownLinksResolve reads every Markdown file of the module (the
// README, docs/, the contributor pages) and fails on a relative link whose
// file does not exist, or whose #anchor names no heading of that file: a
// page moved or a heading renamed must take its links along.
func TestMarkdownLinksResolve(t *testing.T) {
	var pages []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d Markdown files: %v", len(pages), pages)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a := map[string]bool{}
		if src, err := os.ReadFile(page); err == nil {
			for _, m := range mdHeading.FindAllStringSubmatch(mdFence.ReplaceAllString(string(src), ""), -1) {
				a[mdAnchor(m[1])] = true
			}
		}
		anchors[page] = a
		return a
	}
	checked := 0
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := mdFence.ReplaceAllString(string(src), "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			checked++
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[anchor] {
				t.Errorf("%s: link %q: %s has no heading with anchor %q", page, target, dest, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link checked")
	}
}
