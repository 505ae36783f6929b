package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/envelope"
	"github.com/hookpack/hookpack/pkg/webhook"
)

func TestIsPointer(t *testing.T) {
	ptr := `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"q.fifo/k"}]`
	// An envelope whose payload mentions the pointer class, or is itself
	// a pointer: still an envelope.
	env := func(body string) string {
		m, _, err := EventMessage("acme", "hmac", webhook.Event{ID: "e1", Conversation: "c", Body: []byte(body)}, time.Unix(0, 1))
		if err != nil {
			t.Fatal(err)
		}
		return string(m.Body)
	}
	tests := []struct {
		name, body string
		want       bool
	}{
		{"pointer as written", ptr, true},
		{"pointer with whitespace", " [ \"software.amazon.payloadoffloading.PayloadS3Pointer\" , {\"s3Key\": \"k\", \"s3BucketName\": \"b\"} ]\n", true},
		{"class with an escape", `["software\u002eamazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`, true},
		{"pointer with an extra field", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k","v":2}]`, true},
		{"envelope", env(`{"id":1}`), false},
		{"envelope whose body names the class", env(`{"class":"software.amazon.payloadoffloading.PayloadS3Pointer"}`), false},
		{"envelope whose body is a pointer", env(ptr), false},
		{"envelope whose text body is a pointer", env(ptr + " "), false},
		{"another class", `["com.example.Pointer",{"s3BucketName":"b","s3Key":"k"}]`, false},
		{"class alone", `["software.amazon.payloadoffloading.PayloadS3Pointer"]`, false},
		{"three parts", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"},1]`, false},
		{"no key", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b"}]`, false},
		{"empty bucket", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"","s3Key":"k"}]`, false},
		{"key not a string", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":1}]`, false},
		{"object not an object", `["software.amazon.payloadoffloading.PayloadS3Pointer","b/k"]`, false},
		{"truncated", ptr[:len(ptr)-1], false},
		{"object holding the pointer's fields", `{"s3BucketName":"b","s3Key":"k"}`, false},
		{"empty", "", false},
		{"array of strings", `["a","b"]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsPointer(tt.body); got != tt.want {
				t.Errorf("IsPointer(%.120s) = %v, want %v", tt.body, got, tt.want)
			}
		})
	}
}

// FuzzIsPointer: no envelope ingest can build is taken for a pointer, and
// whatever IsPointer accepts names an object Get would read.
func FuzzIsPointer(f *testing.F) {
	f.Add("evt_1", "cus_1", "invoice.paid", []byte(`{"id":1}`))
	f.Add("e", "", "", []byte(`["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"b","s3Key":"k"}]`))
	f.Add("[", "[", "software.amazon.payloadoffloading.PayloadS3Pointer", []byte("\xff["))
	f.Add("e", "c", "t", []byte(" [\"software.amazon.payloadoffloading.PayloadS3Pointer\",{\"s3BucketName\":\"b\",\"s3Key\":\"k\"}]"))
	f.Fuzz(func(t *testing.T, id, conversation, typ string, body []byte) {
		if id == "" {
			id = "e"
		}
		ev := webhook.Event{ID: id, Conversation: conversation, Type: typ, Body: body, Headers: map[string]string{"x": typ}}
		m, _, err := EventMessage("acme", "hmac", ev, time.Unix(0, 1))
		if err != nil {
			return // not an envelope ingest would send
		}
		if IsPointer(string(m.Body)) {
			t.Fatalf("IsPointer(envelope %s) = true", m.Body)
		}
		if _, err := envelope.Decode(m.Body); err != nil {
			t.Fatalf("Decode(envelope) = %v", err)
		}
		for _, s := range []string{string(body), id, typ} {
			if p, ok := parsePointer(s); ok != IsPointer(s) || ok && (p.Bucket == "" || p.Key == "") || ok && strings.TrimSpace(s)[0] != '[' {
				t.Fatalf("parsePointer(%q) = %+v, %v", s, p, ok)
			}
		}
	})
}

// BenchmarkIsPointer is what telling a pointer from an envelope costs the
// worker per message: nothing for an envelope (it starts with '{'), one
// small JSON decode for a pointer.
func BenchmarkIsPointer(b *testing.B) {
	m, _, err := EventMessage("acme", "stripe", webhook.Event{ID: "evt_1", Conversation: "c", Body: []byte(`{"pad":"` + strings.Repeat("x", 200_000) + `"}`)}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct{ name, body string }{
		{"envelope 200 KB", string(m.Body)},
		{"pointer", `["software.amazon.payloadoffloading.PayloadS3Pointer",{"s3BucketName":"bucket","s3Key":"hookpack-acme.fifo/` + m.DeduplicationID + `"}]`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if IsPointer(bm.body) != strings.HasPrefix(bm.body, "[") {
					b.Fatal("IsPointer is wrong")
				}
			}
		})
	}
}
