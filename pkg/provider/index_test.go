package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestIndex holds docs/providers/README.md to the Registry: every
// registered name is in the first column of exactly one row, the row links
// an existing page, and no row names a provider that is not registered.
func TestIndex(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "providers")
	src, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`([a-z0-9-]+)`")
	link := regexp.MustCompile(`^\[` + "`[a-z0-9-]+`" + `\]\(([a-z0-9-]+\.md)\)`)
	seen := map[string]int{}
	for _, line := range strings.Split(string(src), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| name") || strings.HasPrefix(line, "| ---") {
			continue
		}
		first := strings.TrimSpace(cells[1])
		m := link.FindStringSubmatch(first)
		if m == nil {
			t.Errorf("row %q: its first cell does not link a page", first)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
			t.Errorf("row %q links %s: %v", first, m[1], err)
		}
		for _, n := range name.FindAllStringSubmatch(first, -1) {
			seen[n[1]]++
		}
	}
	reg := Registry()
	for n := range reg {
		if seen[n] != 1 {
			t.Errorf("%s is in %d rows of docs/providers/README.md, want 1", n, seen[n])
		}
	}
	for n := range seen {
		if _, ok := reg[n]; !ok {
			t.Errorf("docs/providers/README.md lists %s, which Registry does not hold", n)
		}
	}
}
