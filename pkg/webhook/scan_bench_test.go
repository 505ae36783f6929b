package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// benchDocs are a Stripe event padded, like the hot-path benchmark pads
// sample deliveries, and a dense document without a long string.
func benchDocs(b *testing.B) map[string][]byte {
	sample, err := os.ReadFile("../../events/samples/stripe/customer-created.json")
	if err != nil {
		b.Fatal(err)
	}
	sample = bytes.TrimSpace(sample)
	docs := map[string][]byte{}
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20} {
		docs[fmt.Sprintf("padded-%dKB", n>>10)] = append([]byte(`{"pad":"`+strings.Repeat("x", n-len(sample)-10)+`",`), sample[1:]...)
	}
	var dense bytes.Buffer
	dense.WriteByte('[')
	for dense.Len() < 4<<10 {
		if dense.Len() > 1 {
			dense.WriteByte(',')
		}
		dense.Write(sample)
	}
	docs["dense-4KB"] = append(dense.Bytes(), ']')
	return docs
}

func BenchmarkScan(b *testing.B) {
	p := NewPaths("id", "type", "account", "data.object.id", "data.object.customer")
	for name, doc := range benchDocs(b) {
		b.Run(name+"/Scan", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			var buf [5]Value
			for b.Loop() {
				if _, err := p.Scan(doc, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

func BenchmarkAppendJSONString(b *testing.B) {
	for name, doc := range benchDocs(b) {
		s := string(doc)
		b.Run(name+"/AppendJSONString", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			dst := make([]byte, 0, 2*len(s))
			for b.Loop() {
				dst = AppendJSONString(dst[:0], s)
			}
		})
		b.Run(name+"/json.Encoder", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
