package rehearsal

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// iamDocAction is an IAM action in backticks, as docs/iam.md writes it.
var iamDocAction = regexp.MustCompile("`([a-z0-9-]+:[A-Za-z]+)`")

// iamDocSid is a statement id in backticks.
var iamDocSid = regexp.MustCompile("`([A-Z][A-Za-z0-9]+)`")

// iamDocRow is one row of a function's table in docs/iam.md: the actions
// of its first cell and the statements of its last.
type iamDocRow struct {
	line    string
	actions []string
	sids    []string
}

// CheckIAMDoc holds docs/iam.md (md) to a rehearsal's report: each
// function's section ("## <LogicalID> (") has a row for every call the
// rehearsal recorded and its role allowed, naming the statement that
// allowed it; every row is a recorded call under that statement; and
// every grant no call used is named after the words "Granted, not used".
// It returns the problems found.
func CheckIAMDoc(md string, rep *Report) []string {
	var problems []string
	for _, f := range rep.IAM.Functions {
		section, ok := iamDocSection(md, f.Name)
		if !ok {
			problems = append(problems, fmt.Sprintf("docs/iam.md has no section \"## %s (\"", f.Name))
			continue
		}
		rows := iamDocRows(section)
		recorded := map[string][]string{} // action → statements that allowed its calls
		for _, c := range f.Calls {
			if c.Decision != "PERMITTED" {
				continue
			}
			recorded[c.Action] = append(recorded[c.Action], c.AllowedBy...)
			for _, sid := range c.AllowedBy {
				if !slices.ContainsFunc(rows, func(r iamDocRow) bool { return slices.Contains(r.actions, c.Action) && slices.Contains(r.sids, sid) }) {
					problems = append(problems, fmt.Sprintf("docs/iam.md, %s: no row for %s allowed by %s (%d× %s in the rehearsal)", f.Name, c.Action, sid, c.Count, c.Operations))
				}
			}
		}
		for _, r := range rows {
			for _, a := range r.actions {
				if !slices.ContainsFunc(r.sids, func(sid string) bool { return slices.Contains(recorded[a], sid) }) {
					problems = append(problems, fmt.Sprintf("docs/iam.md, %s: the row %q names %s under %v, which no recorded call was allowed by", f.Name, r.line, a, r.sids))
				}
			}
		}
		_, unusedText, _ := strings.Cut(section, "Granted, not used")
		for _, g := range rep.Unused() {
			if fn, _, _ := strings.Cut(g.Policy, " "); fn != f.Name {
				continue
			}
			if !strings.Contains(unusedText, "`"+g.Action+"`") || !strings.Contains(unusedText, "`"+g.Sid+"`") {
				problems = append(problems, fmt.Sprintf("docs/iam.md, %s: the unused grant %s (%s) is not named after \"Granted, not used\"", f.Name, g.Action, g.Sid))
			}
		}
	}
	return problems
}

// iamDocSection returns the text of the section headed "## <name> (", up to
// the next "## ".
func iamDocSection(md, name string) (string, bool) {
	_, rest, ok := strings.Cut(md, "\n## "+name+" (")
	if !ok {
		return "", false
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest, true
}

// iamDocRows returns the rows of the section's first table whose header is
// "| Action | … | Allowed by |".
func iamDocRows(section string) []iamDocRow {
	var rows []iamDocRow
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "| Action |") && strings.HasSuffix(line, "| Allowed by |"):
			in = true
		case in && strings.HasPrefix(line, "| ---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			r := iamDocRow{line: line}
			for _, m := range iamDocAction.FindAllStringSubmatch(cells[0], -1) {
				r.actions = append(r.actions, m[1])
			}
			for _, m := range iamDocSid.FindAllStringSubmatch(cells[len(cells)-1], -1) {
				r.sids = append(r.sids, m[1])
			}
			rows = append(rows, r)
		case in:
			return rows
		}
	}
	return rows
}
