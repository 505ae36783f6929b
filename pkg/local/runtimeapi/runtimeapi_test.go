package runtimeapi

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func buildEcho(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bin, "./testdata/echo")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	return bin
}

func TestInvoke(t *testing.T) {
	bin := buildEcho(t)
	tests := []struct {
		name        string
		event       string
		wantPayload string
		wantErr     string
	}{
		{"response", `{"name":"ada"}`, `{"deadline":true,"greeting":"hi","hello":"ada"}`, ""},
		{"function error", `{"fail":true}`, "", "asked to fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Invoke(context.Background(), Options{Binary: bin, Env: []string{"GREETING=hi"}, Event: []byte(tt.event), Timeout: 5 * time.Second})
			if err != nil {
				t.Fatalf("Invoke() = %v", err)
			}
			if string(res.Payload) != tt.wantPayload {
				t.Errorf("payload = %s, want %s", res.Payload, tt.wantPayload)
			}
			if (res.Error == nil) != (tt.wantErr == "") || (res.Error != nil && res.Error.Message != tt.wantErr) {
				t.Errorf("error = %v, want %q", res.Error, tt.wantErr)
			}
			if res.Init <= 0 || res.Duration <= 0 {
				t.Errorf("init %s, duration %s: want both measured", res.Init, res.Duration)
			}
		})
	}
}

// An Instance stays warm: it serves invocations one after the other
// without a new init.
func TestInstanceServesInvocationsInTurn(t *testing.T) {
	bin := buildEcho(t)
	in, err := Start(context.Background(), Options{Binary: bin, Env: []string{"GREETING=hi"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	defer in.Close()
	for _, name := range []string{"ada", "grace", "edsger"} {
		res, err := in.Invoke(context.Background(), []byte(`{"name":"`+name+`"}`))
		want := `{"deadline":true,"greeting":"hi","hello":"` + name + `"}`
		if err != nil || string(res.Payload) != want {
			t.Fatalf("Invoke(%s) = %s, %v; want %s", name, res.Payload, err, want)
		}
	}
}
