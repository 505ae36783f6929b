package rehearsal

import (
	"strings"
	"testing"
)

func TestCheckIAMDoc(t *testing.T) {
	rep := &Report{}
	rep.IAM.Functions = []FunctionVerdict{{
		Name: "WorkerFunction",
		Calls: []Verdict{
			{Probe: Probe{Action: "sqs:SendMessage", Count: 1, Operations: "SendMessage"}, Decision: "PERMITTED", AllowedBy: []string{"DeadLetterWithReason"}},
			{Probe: Probe{Action: "dynamodb:PutItem", Count: 9}, Decision: "PERMITTED", AllowedBy: []string{"EffectLedger"}},
			{Probe: Probe{Action: "dynamodb:UpdateItem", Count: 3}, Decision: "PERMITTED", AllowedBy: []string{"EffectLedger"}},
		},
		Grants: []Grant{{Policy: "P0", Sid: "EffectLedger", Effect: "Allow", Action: "dynamodb:GetItem"}},
	}}
	const good = "# IAM\n\n## WorkerFunction (`WorkerFunctionRole`)\n\n" +
		"| Action | Resource | Operation | Allowed by |\n| --- | --- | --- | --- |\n" +
		"| `sqs:SendMessage` | dlq | `SendMessage` | `DeadLetterWithReason` |\n" +
		"| `dynamodb:PutItem`, `dynamodb:UpdateItem` | ledger | claims | `EffectLedger` |\n\n" +
		"Granted, not used by the rehearsal: `dynamodb:GetItem` on the ledger table (`EffectLedger`).\n\n## Every role\n"
	tests := []struct {
		name, md, want string
	}{
		{"as recorded", good, ""},
		{"a call without its row", strings.Replace(good, "| `sqs:SendMessage` | dlq | `SendMessage` | `DeadLetterWithReason` |\n", "", 1), "no row for sqs:SendMessage allowed by DeadLetterWithReason"},
		{"a row under another statement", strings.Replace(good, "`SendMessage` | `DeadLetterWithReason`", "`SendMessage` | `EffectLedger`", 1), "no row for sqs:SendMessage allowed by DeadLetterWithReason"},
		{"a row no call made", strings.Replace(good, "`dynamodb:UpdateItem` |", "`dynamodb:UpdateItem`, `dynamodb:DeleteItem` |", 1), "names dynamodb:DeleteItem"},
		{"an unused grant not named", strings.Replace(good, "`dynamodb:GetItem` on", "a read on", 1), "the unused grant dynamodb:GetItem (EffectLedger)"},
		{"no section", strings.Replace(good, "## WorkerFunction (", "## Worker (", 1), `no section "## WorkerFunction ("`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(CheckIAMDoc(tt.md, rep), "\n")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("CheckIAMDoc() = %q, want %q", got, tt.want)
			}
		})
	}
}
