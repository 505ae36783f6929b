package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ingestStatuses reads pkg/ingest/status.go's classify, the one error →
// HTTP status map, as the status each error it names maps to: "tenantid.ErrInvalid"
// → "400". classify is unexported, so its source is read.
func ingestStatuses(t *testing.T, root string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "pkg", "ingest", "status.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int{}
	for c := 100; c < 600; c++ {
		if text := http.StatusText(c); text != "" {
			codes["Status"+strings.NewReplacer(" ", "", "-", "").Replace(text)] = c
		}
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "classify" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok || len(cc.Body) == 0 {
				return true
			}
			ret, ok := cc.Body[len(cc.Body)-1].(*ast.ReturnStmt)
			if !ok || len(ret.Results) == 0 {
				return true
			}
			sel, ok := ret.Results[0].(*ast.SelectorExpr)
			if !ok || codes[sel.Sel.Name] == 0 {
				return true
			}
			for _, e := range cc.List {
				call, ok := e.(*ast.CallExpr)
				if !ok || len(call.Args) != 2 {
					continue
				}
				switch arg := call.Args[1].(type) {
				case *ast.SelectorExpr:
					out[arg.X.(*ast.Ident).Name+"."+arg.Sel.Name] = strconv.Itoa(codes[sel.Sel.Name])
				case *ast.Ident:
					out[arg.Name] = strconv.Itoa(codes[sel.Sel.Name])
				}
			}
			return true
		})
		return false
	})
	if len(out) < 8 {
		t.Fatalf("read %d errors from pkg/ingest/status.go's classify: %v", len(out), out)
	}
	return out
}

// responseStatements are the README's responses table rows whose status
// classify decides.
func responseStatements(t *testing.T, root string) []statement {
	status := ingestStatuses(t, root)
	row := func(situation, err string) statement {
		want, ok := status[err]
		if !ok {
			t.Fatalf("pkg/ingest/status.go's classify names no %s: %v", err, status)
		}
		return statement{"README.md", "^\\| " + situation + "[^|]*\\| `(\\d+)`", want, "pkg/ingest/status.go classify: " + err}
	}
	return []statement{
		row("bad or missing signature", "webhook.ErrInvalidSignature"),
		row("bad or missing signature, stale timestamp", "webhook.ErrStale"),
		row("wrong handshake token", "webhook.ErrForbidden"),
		row("malformed body or headers", "webhook.ErrMalformed"),
		row("malformed body or headers, invalid tenant id", "tenantid.ErrInvalid"),
		row("unknown tenant, or provider not enabled", "tenant.ErrNotFound"),
		row("a body over", "errBodyTooLarge"),
		row("GET on a provider without a handshake", "errMethodNotAllowed"),
		row("AWS error", "errUnavailable"),
	}
}
