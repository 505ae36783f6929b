package tenant

import (
	"strings"
	"testing"
)

// TestDecode: every field a tenant's configuration has no place for is
// named by its path, at every level, all at once, beside the other
// problems encoding/json reports; a value that decodes itself (a filter
// condition's) takes any JSON.
func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		v    any
		doc  string
		want []string // none: valid
	}{
		{"a valid tenants file", &File{}, `{"tenants":{"a":{"providers":{"github":{"secrets":["x"],"settings":{"any_key":"v"}}},
			"outbound":{"destinations":[{"name":"d","url":"https://d.example","secrets":["y"],"rate":"1/s","burst":2,"timeout":"5s",
			"filter":{"events":["github:*"],"where":[{"path":"a","equals":{"nested":[1,{"x":2}]}},{"path":"b","in":[{"k":1},"s"]},{"path":"c","exists":true}]}}]}}}}`, nil},
		{"a field matched but for case", &Outbound{}, `{"TargetURL":"https://x.example","Secrets":["y"]}`, nil},
		{"the top level", &Outbound{}, `{"targetUrl":"https://x.example","secrets":["y"],"retries":3}`, []string{`f: unknown field "retries"`}},
		{"a tenant (the embedded inbound's fields are its own)", &File{}, `{"tenants":{"a":{"providers":{},"Inbound":{}}}}`, []string{`f: tenants.a: unknown field "Inbound"`}},
		{"a provider", &Inbound{}, `{"providers":{"stripe":{"secret":["x"]}}}`, []string{`f: providers.stripe: unknown field "secret"`}},
		{"a destination", &Outbound{}, `{"destinations":[{"name":"d"},{"name":"e","colour":"red"}]}`, []string{`f: destinations[1]: unknown field "colour"`}},
		{"a filter", &Outbound{}, `{"destinations":[{"name":"d","filter":{"event":["stripe:invoice.*"]}}]}`, []string{`f: destinations[0].filter: unknown field "event"`}},
		{"a condition", &Outbound{}, `{"destinations":[{"filter":{"where":[{"path":"a"},{"path":"b","equal":1}]}}]}`, []string{`f: destinations[0].filter.where[1]: unknown field "equal"`}},
		{"several at once, with a wrong type and data after", &Outbound{}, `{"timeout":5,"tries":1,"destinations":[{"nme":"d","filter":{"event":[]}}]} {}`,
			[]string{`f: unknown field "tries"`, `f: destinations[0]: unknown field "nme"`, `f: destinations[0].filter: unknown field "event"`,
				`f: field timeout must be string`, `f: data after the object`}},
		{"syntax", &Outbound{}, `{"targetUrl":`, []string{"f: unexpected end"}},
		{"a syntax error, not the value", &Outbound{}, `{"secrets":["whsec_secret"] x}`, []string{"f: syntax error at byte"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Decode("f", []byte(tt.doc), tt.v)
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Decode(%s) = %v, want nil", tt.doc, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode(%s) = nil, want %q", tt.doc, tt.want)
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tt.want) {
				t.Errorf("Decode(%s) named %d problems, want %d:\n%v", tt.doc, got, len(tt.want), err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Decode(%s) = %v\nwant %q in it", tt.doc, err, w)
				}
			}
			if strings.Contains(err.Error(), "whsec_secret") {
				t.Errorf("Decode(%s) = %v, quotes a value", tt.doc, err)
			}
		})
	}
}
