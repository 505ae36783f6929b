package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/hookpack/hookpack/pkg/local/awstest"
)

// markdown returns README.md and every page under docs/, relative to root.
func markdown(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d markdown files under %s; the walk is broken", len(files), root)
	}
	return files
}

// page is a markdown file split into prose lines and code (fenced blocks
// and inline code spans).
type page struct {
	prose []string // lines outside fenced blocks, inline code removed
	code  []string // fenced block lines and inline code spans
	heads []string // heading texts
}

var inlineCode = regexp.MustCompile("`[^`]*`")

func read(t *testing.T, path string) page {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p page
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			p.code = append(p.code, line)
			continue
		}
		if h, ok := strings.CutPrefix(line, "#"); ok {
			p.heads = append(p.heads, strings.TrimSpace(strings.TrimLeft(h, "#")))
		}
		p.code = append(p.code, inlineCode.FindAllString(line, -1)...)
		p.prose = append(p.prose, inlineCode.ReplaceAllString(line, "``"))
	}
	return p
}

// slug is GitHub's anchor for a heading: lower case, punctuation dropped
// (but '-' and '_'), spaces turned into '-'.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns a page's heading anchors, with GitHub's -1, -2 for
// repeated headings.
func anchors(p page) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, h := range p.heads {
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

var link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestLinks fails on a relative link or #anchor of README.md or docs/**
// that leads nowhere. External links are not followed.
func TestLinks(t *testing.T) {
	root := awstest.ModuleRoot()
	pages := map[string]page{}
	get := func(rel string) page {
		if p, ok := pages[rel]; ok {
			return p
		}
		p := read(t, filepath.Join(root, rel))
		pages[rel] = p
		return p
	}
	checked := 0
	for _, file := range markdown(t, root) {
		for _, line := range get(file).prose {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				path, anchor, _ := strings.Cut(target, "#")
				rel := file
				if path != "" {
					rel = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						t.Errorf("%s: link %s: %s does not exist", file, target, rel)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(rel, ".md") {
					t.Errorf("%s: link %s: an anchor into a file that is not markdown", file, target)
					continue
				}
				if !anchors(get(rel))[anchor] {
					t.Errorf("%s: link %s: %s has no heading #%s", file, target, rel, anchor)
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d relative links; the link pattern no longer matches the docs", checked)
	}
}

var (
	makeCall = regexp.MustCompile(`\bmake ((?:[A-Za-z_]+=\S*\s+)*)([a-z][a-z0-9-]*)\b`)
	rule     = regexp.MustCompile(`^([a-z][a-z0-9-]*)\s*:`)
)

// TestMakeTargets fails when README.md or docs/** name, in code, a
// `make <target>` the Makefile does not define.
func TestMakeTargets(t *testing.T) {
	root := awstest.ModuleRoot()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := rule.FindStringSubmatch(line); m != nil && !strings.Contains(line, ":=") {
			targets[m[1]] = true
		}
	}
	if !targets["test"] || !targets["run"] {
		t.Fatalf("read no test or run target from the Makefile: %v", targets)
	}
	named := 0
	for _, file := range markdown(t, root) {
		for _, code := range read(t, filepath.Join(root, file)).code {
			for _, m := range makeCall.FindAllStringSubmatch(code, -1) {
				named++
				if !targets[m[2]] {
					t.Errorf("%s: %q names make %s, which the Makefile does not define", file, strings.TrimSpace(m[0]), m[2])
				}
			}
		}
	}
	if named < 20 {
		t.Errorf("found %d make calls in the docs; the pattern no longer matches them", named)
	}
}

// section returns the lines of file from the first line starting with
// start up to the first line starting with end after it.
func section(t *testing.T, file, start, end string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.HasPrefix(line, start):
			in = true
		case in && strings.HasPrefix(line, end):
			return out
		case in:
			out = append(out, line)
		}
	}
	if !in {
		t.Fatalf("%s has no line starting with %q", file, start)
	}
	return out
}

// developmentLayout returns the packages development.md's layout block
// names: "pkg/queue, pkg/envelope", "pkg/internal/epoch, lease" (siblings),
// and the indented names under "pkg/local/…" (its children).
func developmentLayout(lines []string) []string {
	var names []string
	local := false
	for _, line := range lines {
		if strings.HasPrefix(line, "```") {
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		indented := len(trimmed) < len(line)
		if !indented {
			local = false
		}
		col, _, _ := strings.Cut(trimmed, "  ")
		base := ""
		for _, tok := range strings.Split(col, ", ") {
			tok = strings.TrimSpace(tok)
			switch {
			case tok == "pkg/local/…":
				local = true
			case strings.HasPrefix(tok, "pkg/"):
				names = append(names, tok)
				base = tok[:strings.LastIndexByte(tok, '/')]
			case base != "" && tok != "":
				names = append(names, base+"/"+tok)
			case local && indented && tok != "":
				names = append(names, "pkg/local/"+tok)
			}
		}
	}
	return names
}

var codePath = regexp.MustCompile("`(pkg/[A-Za-z0-9_/<>.-]+)`")

// architectureLayout returns the packages architecture.md's stage table
// and the paragraph after it name.
func architectureLayout(lines []string) []string {
	var names []string
	for _, line := range lines {
		for _, m := range codePath.FindAllStringSubmatch(line, -1) {
			names = append(names, strings.TrimSuffix(m[1], "/"))
		}
	}
	return names
}

// packages returns the directories under root/pkg holding a Go package
// (test-only directories and testdata excluded), relative to root.
func packages(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				rel, _ := filepath.Rel(root, p)
				out = append(out, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// covers reports whether a layout entry stands for pkg: pkg itself, an
// ancestor of it (pkg/local only through its listed children), or a
// pattern such as pkg/provider/<name>.
func covers(name, pkg string) bool {
	if base, ok := strings.CutSuffix(name, "/<name>"); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	if name == "pkg/local" {
		return pkg == name
	}
	return pkg == name || strings.HasPrefix(pkg, name+"/")
}

// TestLayout fails when a layout section (development.md's Layout block,
// architecture.md's stage table and the line after it) names a package
// that does not exist, or leaves out a product package (anything under
// pkg/ but pkg/local; development.md lists pkg/local's packages too).
func TestLayout(t *testing.T) {
	root := awstest.ModuleRoot()
	pkgs := packages(t, root)
	sections := []struct {
		file  string
		names []string
	}{
		{"docs/development.md", developmentLayout(section(t, filepath.Join(root, "docs", "development.md"), "## Layout", "## "))},
		{"docs/architecture.md", architectureLayout(section(t, filepath.Join(root, "docs", "architecture.md"), "| stage |", "```"))},
	}
	for _, s := range sections {
		if len(s.names) < 10 {
			t.Fatalf("%s: read %d package names from its layout: %v", s.file, len(s.names), s.names)
		}
		for _, n := range s.names {
			dir := strings.TrimSuffix(n, "/<name>")
			if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() && !strings.Contains(n, ".") {
				t.Errorf("%s names %s, which does not exist", s.file, n)
			}
		}
		for _, p := range pkgs {
			local := p == "pkg/local" || strings.HasPrefix(p, "pkg/local/")
			if local && (s.file != "docs/development.md" || strings.Count(p, "/") != 2) {
				continue // pkg/local's packages are listed in development.md only, not their sub-packages
			}
			if !slices.ContainsFunc(s.names, func(n string) bool { return covers(n, p) }) {
				t.Errorf("%s: its layout leaves out %s", s.file, p)
			}
		}
	}
}

var helpLine = regexp.MustCompile(`^## ([a-z][a-z0-9-]*): (\S.*)$`)

// TestMakeHelp fails when a target of the Makefile has no `## target: text`
// line, when such a line names no target or a target twice, and when
// `make help` does not list every target on a line of its own.
func TestMakeHelp(t *testing.T) {
	root := awstest.ModuleRoot()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	helped := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := rule.FindStringSubmatch(line); m != nil && !strings.Contains(line, ":=") && !slices.Contains(targets, m[1]) {
			targets = append(targets, m[1])
		}
		if m := helpLine.FindStringSubmatch(line); m != nil {
			helped[m[1]]++
		}
	}
	if len(targets) < 10 || !slices.Contains(targets, "help") {
		t.Fatalf("read %d targets from the Makefile, without help: %v", len(targets), targets)
	}
	for _, target := range targets {
		if n := helped[target]; n != 1 {
			t.Errorf("Makefile: target %s has %d `## %s: …` help lines, want 1", target, n, target)
		}
	}
	for name := range helped {
		if !slices.Contains(targets, name) {
			t.Errorf("Makefile: help line `## %s: …` names no target", name)
		}
	}

	cmd := exec.Command("make", "-s", "--no-print-directory", "help")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	listed := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, text, _ := strings.Cut(line, " ")
		if strings.TrimSpace(text) == "" {
			t.Errorf("make help: %q has no text", line)
		}
		listed[name]++
	}
	for _, target := range targets {
		if listed[target] != 1 {
			t.Errorf("make help lists %s %d times, want once:\n%s", target, listed[target], out)
		}
	}
	if len(listed) != len(targets) {
		t.Errorf("make help lists %d names, the Makefile has %d targets:\n%s", len(listed), len(targets), out)
	}
}

// topLevel is what a clone holds at its root, as docs/development.md's
// layout and the brief promise users.
var topLevel = []string{
	".ci", ".gitignore", "Makefile", "README.md", "docs", "events", "functions",
	"go.mod", "go.sum", "pkg", "samconfig.toml", "scripts", "template-tenant.yaml", "template.yaml",
}

// TestTracked fails when a commit adds a file at the root that users do not
// expect there, or any tracked file over 256 KiB (a built binary, a log, a
// dump) — the kind of file a stray `go build ./scripts/inspect` leaves.
func TestTracked(t *testing.T) {
	root := awstest.ModuleRoot()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	files := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	if len(files) < 100 {
		t.Fatalf("git ls-files listed %d files; the listing is broken", len(files))
	}
	for _, f := range files {
		top, _, _ := strings.Cut(f, "/")
		if !slices.Contains(topLevel, top) {
			t.Errorf("%s is tracked at the root; users expect only %v there", f, topLevel)
		}
		fi, err := os.Lstat(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		if fi.Size() > 256<<10 {
			t.Errorf("%s is tracked and %d KiB; a built binary or a dump does not belong in git", f, fi.Size()>>10)
		}
	}
}

// TestMutationsApply fails when a rule broken on purpose
// (scripts/mutations/*.patch, applied by scripts/mutate.sh) no longer
// applies to the code: its row in docs/reliability.md could not be measured
// again. The check changes nothing (git apply --check).
func TestMutationsApply(t *testing.T) {
	root := awstest.ModuleRoot()
	if err := exec.Command("git", "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	patches, err := filepath.Glob(filepath.Join(root, "scripts", "mutations", "*.patch"))
	if err != nil || len(patches) == 0 {
		t.Fatalf("no mutation patches found (%v)", err)
	}
	reliability, err := os.ReadFile(filepath.Join(root, "docs", "reliability.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range patches {
		name := strings.TrimSuffix(filepath.Base(p), ".patch")
		if out, err := exec.Command("git", "-C", root, "apply", "--check", p).CombinedOutput(); err != nil {
			t.Errorf("%s no longer applies (make it again against the code): %v\n%s", name, err, out)
		}
		if !strings.Contains(string(reliability), "(`"+name+"`") {
			t.Errorf("%s has no row in docs/reliability.md's mutation table", name)
		}
	}
}
