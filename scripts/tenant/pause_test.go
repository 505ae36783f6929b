package tenant

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// TestPauseResume runs tenant.sh pause, status and resume against a core
// stack on moto (its ledger table and tenant parameters found from its
// outputs), with their exit statuses and messages.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// Its tenant pz has credentials but no tenant stack: on the shared core
	// it would show in TestAddIngestRemove's list (make test-long).
	e.ownCore(t, "hp")
	_, err := ssm.NewFromConfig(e.cfg).PutParameter(context.Background(), &ssm.PutParameterInput{
		Name:  aws.String("/" + e.core + "/tenants/pz/outbound"),
		Value: aws.String(`{"destinations":[{"name":"billing","url":"https://billing.example/hooks","secrets":["whsec_c2VjcmV0"]}]}`),
		Type:  ssmtypes.ParameterTypeSecureString,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"pause", "pz", "billing", "--reason", "maintenance until 14:00"}, 0, "paused pz/billing: paused since"},
		{[]string{"status", "pz"}, 0, "pz/billing: paused since"},
		{[]string{"pause", "pz", "billing", "--reason", "again"}, 0, "was already paused, left as it is"},
		{[]string{"pause", "pz", "crm", "--reason", "x"}, 2, `unknown destination "crm": tenant pz has destinations billing`},
		{[]string{"pause", "nobody", "billing", "--reason", "x"}, 2, "unknown tenant nobody"},
		{[]string{"pause", "pz", "billing"}, 2, "a reason is required"},
		{[]string{"resume", "pz", "billing"}, 0, "resumed pz/billing, which was paused since"},
		{[]string{"resume", "pz", "billing"}, 0, "pz/billing is not paused"},
		{[]string{"status", "pz"}, 0, "pz/billing: delivering"},
	} {
		out, err := e.tenant(t, nil, tt.args...)
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("tenant.sh %v = exit %d %q, want exit %d containing %q", tt.args, code, out, tt.code, tt.want)
		}
	}
}
