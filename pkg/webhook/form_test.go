package webhook

import (
	"mime"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseForm(t *testing.T) {
	f, err := ParseForm([]byte("a=1&b=x+y%2Bz&a=2&&c&=e&d=%E2%82%AC&a=3"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, want string }{{"a", "1"}, {"b", "x y+z"}, {"c", ""}, {"", "e"}, {"d", "€"}, {"missing", ""}}
	for _, tt := range tests {
		if got := f.Get(tt.name); got != tt.want {
			t.Errorf("Get(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if f.Len() != 7 {
		t.Errorf("Len() = %d, want 7", f.Len())
	}
	if n, v := f.Field(2); string(n) != "a" || string(v) != "2" {
		t.Errorf("Field(2) = %q, %q; want a, 2", n, v)
	}
	for _, bad := range []string{"a=%zz", "a=1;b=2", "a=%4", "%=1&b=2", "a=1&b=%", strings.Repeat("a&", 20000)} {
		if _, err := ParseForm([]byte(bad)); err == nil {
			t.Errorf("ParseForm(%.20q) = nil error, want url.ParseQuery's", bad)
		}
	}
}

// FuzzParseForm holds ParseForm to url.ParseQuery: the same verdict and, for
// a valid form, the same values for every name in the same order.
func FuzzParseForm(f *testing.F) {
	f.Add("a=1&b=x+y%2Bz&a=2&&c&=e")
	f.Add("ToCountry=US&Body=Hello+from+Twilio&To=%2B15557654321&Pad=" + strings.Repeat("x", 100))
	f.Add("a=%zz&b=1")
	f.Add("a;b=1")
	f.Add("%41%4a%4A=%e2%82%ac+")
	f.Fuzz(func(t *testing.T, body string) {
		want, wantErr := url.ParseQuery(body)
		got, err := ParseForm([]byte(body))
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("ParseForm(%q) error = %v, url.ParseQuery %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		have := url.Values{}
		for i := range got.Len() {
			n, v := got.Field(i)
			have[string(n)] = append(have[string(n)], string(v))
		}
		if !reflect.DeepEqual(have, want) {
			t.Fatalf("ParseForm(%q) = %v, url.ParseQuery %v", body, have, want)
		}
		for name := range want {
			if got.Get(name) != want.Get(name) {
				t.Fatalf("Get(%q) = %q, want %q", name, got.Get(name), want.Get(name))
			}
		}
	})
}

func TestMediaType(t *testing.T) {
	for _, ct := range []string{"application/json", "application/x-www-form-urlencoded", "Application/JSON; charset=utf-8", "", "text/plain;", "a/b; c"} {
		want, _, wantErr := mime.ParseMediaType(ct)
		got, err := MediaType(ct)
		if got != want || (err == nil) != (wantErr == nil) {
			t.Errorf("MediaType(%q) = %q, %v; mime.ParseMediaType %q, %v", ct, got, err, want, wantErr)
		}
	}
}

// BenchmarkParseForm compares ParseForm with url.ParseQuery on Twilio's
// sample SMS webhook padded to 4 KB, as the hot-path benchmark pads it.
func BenchmarkParseForm(b *testing.B) {
	body := "ToCountry=US&SmsMessageSid=SM1f0e8ae6ade43cb3c0ce4525424e404f&NumMedia=0&SmsSid=SM1f0e8ae6ade43cb3c0ce4525424e404f" +
		"&SmsStatus=received&Body=Hello+from+Twilio&To=%2B15557654321&NumSegments=1&MessageSid=SM1f0e8ae6ade43cb3c0ce4525424e404f" +
		"&AccountSid=ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX&From=%2B15551234567&ApiVersion=2010-04-01&Pad="
	body += strings.Repeat("x", 4096-len(body))
	b.Run("ParseForm", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		raw := []byte(body)
		for b.Loop() {
			if _, err := ParseForm(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("url.ParseQuery", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		raw := []byte(body)
		for b.Loop() {
			if _, err := url.ParseQuery(string(raw)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
