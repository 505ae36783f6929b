//go:build long

package tenant

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Onboarding runs at once must not drop each other's ids from the list the
// ingest function loads (the lists are read, changed and written back under
// a lock), and a lock a dead run left behind is taken over by exactly one
// run: two that both saw it stale must not both enter.
func TestConcurrentAddsKeepEveryID(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// A core stack of its own: the shared one's tenant list belongs to the
	// other tests.
	e.ownCore(t, "hq")
	table := e.stackOutputs(t, e.core)["IdempotencyTableName"]
	lockKey := `{"id":{"S":"_tenant-ids-lock"}}`
	// A lock left by a run that died: it expired 5 minutes ago.
	e.aws(t, "dynamodb", "put-item", "--table-name", table, "--item",
		fmt.Sprintf(`{"id":{"S":"_tenant-ids-lock"},"holder":{"S":"4242@gone"},"expiration":{"N":"%d"}}`, time.Now().Add(-5*time.Minute).Unix()))

	ids := []string{"t1", "t2", "t3", "t4"}
	addAll := func() string {
		outs := make([]string, len(ids))
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() { outs[i], errs[i] = e.tenant(t, nil, "add", id, "in.json") })
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil {
				t.Fatalf("add %s: %v\n%s", ids[i], errs[i], outs[i])
			}
		}
		got := strings.Split(e.listedIDs(t), ",")
		slices.Sort(got)
		if !slices.Equal(got, ids) {
			t.Errorf("onboarded tenant ids = %v after concurrent adds, want %v", got, ids)
		}
		return strings.Join(outs, "\n")
	}
	if out := addAll(); strings.Count(out, "taking over the tenant list lock left by 4242@gone") != 1 {
		t.Errorf("want exactly one run to take the stale lock over:\n%s", out)
	}
	// Again with the stacks in place, so that every run reaches the list at
	// about the same moment.
	e.aws(t, "ssm", "delete-parameter", "--name", "/"+e.core+"/tenant-ids/0")
	if out := addAll(); strings.Contains(out, "taken over") || strings.Contains(out, "taking over") {
		t.Errorf("a live lock was taken over:\n%s", out)
	}
	if out := e.aws(t, "dynamodb", "get-item", "--table-name", table, "--key", lockKey); strings.Contains(out, `"Item"`) {
		t.Errorf("the lock outlived the runs: %s", out)
	}
}
