package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// A statement is a number, default, port, duration or name that a page
// states about the code: pattern finds it in its sentence, its first group
// captures the stated value, and want is that value as the code has it.
type statement struct {
	// files is a file or a glob relative to the module root, or several
	// separated by spaces; the pattern must match in at least one of them.
	files   string
	pattern string
	want    string
	// source says where want comes from.
	source string
}

// An allowed number is one the sweep finds that states nothing the code
// decides (a sender's own retry window, a measurement, the chaos run's
// shortened settings): pattern finds it, reason says why it is not checked.
type allowed struct {
	files, pattern, reason string
}

// A sweep finds the numbers of one kind in the docs: every one must be
// found by a statement or an allowed entry, so that a new number stated
// about the code cannot go unchecked.
type sweep struct {
	what  string
	files string
	// line, when set, keeps only the lines it matches.
	line  string
	value string
}

var sweeps = []sweep{
	{"a duration in days", "README.md docs/*.md", "", `\b\d+(?:–\d+)?[ -]days?\b`},
	{"a dedup window", "docs/providers/*.md", `(?i)dedup|duplicate`, `\b\d+[ -]days?\b|\b\d+ hours?\b`},
	{"a local address or port", "README.md docs/*.md docs/providers/*.md", "",
		"127\\.0\\.0\\.1:\\d+|localhost:\\d+|(?:^|[\\s(`]):\\d{2,5}\\b|\\bport \\d+|\\bexpects \\d+"},
	{"a size", "README.md docs/operations.md docs/architecture.md docs/reliability.md docs/rehearsal.md docs/development.md docs/inspect.md",
		"", `\b\d+(?:\.\d+)? ?(?:MiB|MB|KiB)\b`},
	{"a timeout", "README.md docs/*.md", `(?i)timeout`, `\b\d+ s\b`},
	{"a length in characters", "README.md docs/*.md", "", `\b\d+(?:–\d+)? characters\b|≤ \d+ characters`},
	{"a make variable's default", "docs/development.md", "^\\| `[A-Z]", "^\\| `[A-Z_]+`(?:, `[A-Z_]+`)* \\| `[^`]+`"},
	{"an attempt or receive count", "README.md docs/*.md", "", `\b\d+ attempts\b|\(\d+ by default\)|\(default \d+\)`},
	{"a price make cost measured", "README.md docs/operations.md", `(?i)per million|tenant-month|/month|costs \$|under the \$`, `\$\d+\.\d+`},
}

// doc is one markdown file's lines, read once.
type doc struct {
	rel   string
	lines []string
}

// docs expands space-separated files and globs into the files they name,
// in order, read once through cache.
func docs(t *testing.T, root, files string, cache map[string]doc) []doc {
	t.Helper()
	var out []doc
	for _, g := range strings.Fields(files) {
		matches, err := filepath.Glob(filepath.Join(root, g))
		if err != nil || len(matches) == 0 {
			t.Fatalf("%s names no file (%v)", g, err)
		}
		for _, m := range matches {
			rel, _ := filepath.Rel(root, m)
			rel = filepath.ToSlash(rel)
			d, ok := cache[rel]
			if !ok {
				b, err := os.ReadFile(m)
				if err != nil {
					t.Fatal(err)
				}
				d = doc{rel: rel, lines: strings.Split(string(b), "\n")}
				cache[rel] = d
			}
			out = append(out, d)
		}
	}
	return out
}

// span is a match on one line of a file.
type span struct {
	file       string
	line, a, b int
}

// TestNumbers fails when a page states a number, default, port, duration
// or name that differs from the code's (naming the file and line), when a
// checked statement cannot be found any more (it was removed or reworded:
// reword it so that the row finds it, or change the row), and when a
// number of a swept kind is stated that no row checks and no allowed entry
// explains.
func TestNumbers(t *testing.T) {
	root := awstest.ModuleRoot()
	cache := map[string]doc{}
	var covered []span
	for _, s := range statements(t, root) {
		re := regexp.MustCompile(s.pattern)
		if re.NumSubexp() < 1 {
			t.Fatalf("statement %q captures nothing", s.pattern)
		}
		found := 0
		for _, d := range docs(t, root, s.files, cache) {
			for i, line := range d.lines {
				for _, m := range re.FindAllStringSubmatchIndex(line, -1) {
					found++
					covered = append(covered, span{d.rel, i, m[0], m[1]})
					got := ""
					for g := 1; g <= re.NumSubexp(); g++ {
						if m[2*g] >= 0 {
							got = line[m[2*g]:m[2*g+1]]
							break
						}
					}
					if got != s.want {
						t.Errorf("%s:%d: %q states %s; the code has %s (%s)", d.rel, i+1, line[m[0]:m[1]], got, s.want, s.source)
					}
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: no sentence matches %q any more: the statement of %s (%s) was removed or reworded; reword it so that the pattern finds it, or change the row in numbers_test.go",
				s.files, s.pattern, s.want, s.source)
		}
	}
	for _, a := range allowances {
		re := regexp.MustCompile(a.pattern)
		found := 0
		for _, d := range docs(t, root, a.files, cache) {
			for i, line := range d.lines {
				for _, m := range re.FindAllStringIndex(line, -1) {
					found++
					covered = append(covered, span{d.rel, i, m[0], m[1]})
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: allowed entry %q (%s) matches nothing any more: remove it", a.files, a.pattern, a.reason)
		}
	}
	isCovered := func(file string, line, a, b int) bool {
		for _, c := range covered {
			if c.file == file && c.line == line && c.a <= a && b <= c.b {
				return true
			}
		}
		return false
	}
	swept := 0
	for _, sw := range sweeps {
		value := regexp.MustCompile(sw.value)
		var keep *regexp.Regexp
		if sw.line != "" {
			keep = regexp.MustCompile(sw.line)
		}
		for _, d := range docs(t, root, sw.files, cache) {
			for i, line := range d.lines {
				if keep != nil && !keep.MatchString(line) {
					continue
				}
				for _, m := range value.FindAllStringIndex(line, -1) {
					swept++
					a := m[0]
					if line[a] == ' ' || line[a] == '(' || line[a] == '`' || line[a] == '\t' {
						a++ // the character before a bare ":port"
					}
					if !isCovered(d.rel, i, a, m[1]) {
						t.Errorf("%s:%d: %q states %s that no test checks: add a statement to numbers_test.go that checks it against the code, or an allowed entry saying why it states nothing the code decides",
							d.rel, i+1, line[a:m[1]], sw.what)
					}
				}
			}
		}
	}
	if swept < 50 {
		t.Errorf("the sweeps found %d numbers; their patterns no longer match the docs", swept)
	}
}

// days is d in whole days, as the docs state it.
func days(d time.Duration) string { return strconv.Itoa(int(d / (24 * time.Hour))) }

// seconds is d in whole seconds.
func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// port is the port of a host:port address.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, ok := strings.Cut(addr, ":")
	if !ok {
		t.Fatalf("address %q has no port", addr)
	}
	return p
}

var (
	makeDefault = regexp.MustCompile(`^([A-Z_]+) \?= (.+)$`)
	shellInline = regexp.MustCompile(`\$\$\{([A-Z_]+):-([^}]+)\}`)
)

// makeDefaults returns the Makefile's variable defaults: `NAME ?= value`
// and a recipe's `$${NAME:-value}`.
func makeDefaults(t *testing.T, root string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := makeDefault.FindStringSubmatch(line); m != nil {
			out[m[1]] = strings.TrimSpace(m[2])
		}
		for _, m := range shellInline.FindAllStringSubmatch(line, -1) {
			out[m[1]] = m[2]
		}
	}
	for _, v := range []string{"ADDR", "MOTO_PORT", "DYNAMODB_PORT"} {
		if out[v] == "" {
			t.Fatalf("read no default of %s from the Makefile: %v", v, out)
		}
	}
	return out
}

// yamlValue returns the scalar at path (one key per level of indentation)
// of a template: the templates are CloudFormation YAML whose values the
// docs state are plain scalars, so a walk over indentation reads them
// without a YAML library.
func yamlValue(t *testing.T, root, file string, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	indent := -1
	i := 0
	for k, key := range path {
		found := false
		for ; i < len(lines); i++ {
			line := lines[i]
			trimmed := strings.TrimLeft(line, " ")
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			in := len(line) - len(trimmed)
			if in <= indent {
				break // the end of the enclosing block
			}
			if rest, ok := strings.CutPrefix(trimmed, key+":"); ok {
				indent, found = in, true
				if k == len(path)-1 {
					return strings.Trim(strings.TrimSpace(rest), `"'`)
				}
				i++
				break
			}
		}
		if !found {
			t.Fatalf("%s has no %s", file, strings.Join(path[:k+1], "."))
		}
	}
	return ""
}

// number parses a template's number.
func number(t *testing.T, v, what string) int {
	t.Helper()
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s = %q: %v", what, v, err)
	}
	return n
}

// equal fails when two places that must agree do not.
func equal(t *testing.T, a, b, what string) {
	t.Helper()
	if a != b {
		t.Errorf("%s: %s", what, fmt.Sprintf("%q != %q", a, b))
	}
}
