package inspect

import "testing"

// The replay a dead-lettered event's notes print runs as printed: make
// replay on make run, scripts/replay -stack on a deployed stack, and the
// conversation quoted for a shell whatever it holds.
func TestReplayCommand(t *testing.T) {
	tests := []struct {
		name, template, conv, want string
	}{
		{"no command: by queue URL", "", "octo/dead#1", "go run ./scripts/replay -queue-url https://q/hp-acme.fifo -conversation 'octo/dead#1' redrive"},
		{"make run", "make replay TENANT={tenant} CONVERSATION={conversation} ACTION=redrive", "octo/dead#1", "make replay TENANT=acme CONVERSATION='octo/dead#1' ACTION=redrive"},
		{"a deployed stack", "go run ./scripts/replay -stack hookpack -tenant {tenant} -conversation {conversation} redrive", "cus_1", "go run ./scripts/replay -stack hookpack -tenant acme -conversation 'cus_1' redrive"},
		{"a quote in the conversation", "x {conversation}", "it's", `x 'it'\''s'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Deployment{ReplayCommand: tt.template}
			if got := d.replayCommand("acme", tt.conv, "https://q/hp-acme.fifo"); got != tt.want {
				t.Errorf("replayCommand(%q) = %q, want %q", tt.conv, got, tt.want)
			}
		})
	}
}
