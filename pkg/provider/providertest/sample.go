package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookpack/hookpack/pkg/webhook"
)

// Sample is one sample delivery: <root>/<provider>/<name>.request.json and
// the raw body file it names (see events/samples/README.md).
type Sample struct {
	// Provider is the folder name, the {provider} path segment.
	Provider string `json:"-"`
	// Name is the file name without ".request.json".
	Name        string            `json:"-"`
	Description string            `json:"description"`
	Source      string            `json:"source"`
	Method      string            `json:"method"`
	URL         string            `json:"url"`
	Query       map[string]string `json:"query,omitempty"`
	Headers     map[string]string `json:"headers"`
	// BodyFile names the raw body next to the request file.
	BodyFile string `json:"body,omitempty"`
	// At is the Unix time at which a timestamped signature is fresh.
	At int64 `json:"at,omitempty"`
	// StampMS names a top-level JSON member of the body holding the send
	// time in Unix milliseconds, which the sender signs as part of the body
	// (Linear's webhookTimestamp): tooling that re-signs the sample later
	// stamps it first (Stamp).
	StampMS string `json:"stampMs,omitempty"`
	// TenantConfig is the provider configuration the sample was signed for.
	TenantConfig webhook.Config `json:"tenantConfig"`
	// Body holds the bytes of BodyFile, exactly as stored.
	Body []byte `json:"-"`
}

const requestSuffix = ".request.json"

// SamplesDir returns the repository's events/samples folder, wherever the
// test runs from: the one copy of the sample deliveries that the provider
// tests, the local tools and the ingest tests all read.
func SamplesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "events", "samples")
}

// SampleVector loads events/samples/<provider>/<name> as a vector of the
// suite: the sample verifies under its tenant config at its "at", and
// signing it again reproduces headers byte for byte. It fails t when the
// sample cannot be read.
func SampleVector(t testing.TB, provider, name string, headers ...string) Vector {
	t.Helper()
	s, err := LoadSample(SamplesDir(), provider, name)
	if err != nil {
		t.Fatal(err)
	}
	return Vector{Name: "sample " + name, Request: s.Request, Config: s.TenantConfig, At: s.Time(), Headers: headers}
}

// Samples returns every sample under SamplesDir (LoadSamples). It fails t
// when one cannot be read.
func Samples(t testing.TB) []Sample {
	t.Helper()
	all, err := LoadSamples(SamplesDir())
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// SampleConfigs returns the tenant configuration of the samples under
// SamplesDir by provider folder. It fails t when one cannot be read.
func SampleConfigs(t testing.TB) map[string]webhook.Config {
	t.Helper()
	configs := map[string]webhook.Config{}
	for _, s := range Samples(t) {
		configs[s.Provider] = s.TenantConfig
	}
	return configs
}

// ReadFile returns the bytes of a fixture, path being relative to the
// package under test (testdata/…). It fails t when the file cannot be read.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// LoadSamples reads every <root>/*/*.request.json, sorted by provider and
// name. It returns an error naming the file when one does not parse or its
// body file cannot be read.
func LoadSamples(root string) ([]Sample, error) {
	files, err := filepath.Glob(filepath.Join(root, "*", "*"+requestSuffix))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no samples under %s", root)
	}
	sort.Strings(files)
	out := make([]Sample, 0, len(files))
	for _, f := range files {
		s, err := load(f)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// LoadSample reads one sample, <root>/<provider>/<name>.request.json.
func LoadSample(root, provider, name string) (Sample, error) {
	return load(filepath.Join(root, provider, name+requestSuffix))
}

func load(file string) (Sample, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return Sample{}, err
	}
	var s Sample
	if err := json.Unmarshal(raw, &s); err != nil {
		return Sample{}, fmt.Errorf("sample %s: %w", file, err)
	}
	s.Provider = filepath.Base(filepath.Dir(file))
	s.Name = strings.TrimSuffix(filepath.Base(file), requestSuffix)
	if s.Method == "" {
		s.Method = http.MethodPost
	}
	if s.BodyFile != "" {
		if s.Body, err = os.ReadFile(filepath.Join(filepath.Dir(file), s.BodyFile)); err != nil {
			return Sample{}, fmt.Errorf("sample %s: %w", file, err)
		}
	}
	return s, nil
}

// Time is the instant the sample's signature was made for: At, or, for
// schemes without a timestamp (no At), the zero time.
func (s Sample) Time() time.Time {
	if s.At == 0 {
		return time.Time{}
	}
	return time.Unix(s.At, 0)
}

// Stamp returns the body with the StampMS member set to t in Unix
// milliseconds, every other byte kept; the body unchanged when the sample
// has no StampMS. It returns an error when the member is not a number in
// the body.
func (s Sample) Stamp(t time.Time) ([]byte, error) {
	if s.StampMS == "" {
		return s.Body, nil
	}
	name := []byte(`"` + s.StampMS + `":`)
	i := bytes.Index(s.Body, name)
	if i < 0 {
		return nil, fmt.Errorf("sample %s/%s: body has no %s member", s.Provider, s.Name, s.StampMS)
	}
	start := i + len(name)
	end := start
	for end < len(s.Body) && s.Body[end] >= '0' && s.Body[end] <= '9' {
		end++
	}
	if end == start {
		return nil, fmt.Errorf("sample %s/%s: %s is not a number", s.Provider, s.Name, s.StampMS)
	}
	out := append(bytes.Clone(s.Body[:start]), strconv.FormatInt(t.UnixMilli(), 10)...)
	return append(out, s.Body[end:]...), nil
}

// Request returns the delivery as the ingest path hands it to a provider:
// canonical headers, the query, the raw body and the public URL with the
// query appended. Tenant is the {tenant} segment of the URL's path.
func (s Sample) Request() *webhook.Request {
	req := &webhook.Request{
		Method:   s.Method,
		Provider: s.Provider,
		Header:   http.Header{},
		Query:    url.Values{},
		Body:     s.Body,
		URL:      s.URL,
	}
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	u, err := url.Parse(s.URL)
	if err == nil {
		req.Query = u.Query()
		if parts := strings.Split(strings.Trim(u.Path, "/"), "/"); len(parts) == 3 && parts[0] == "webhooks" {
			req.Tenant = parts[1]
		}
	}
	if len(s.Query) > 0 {
		extra := url.Values{}
		for k, v := range s.Query {
			req.Query.Set(k, v)
			extra.Set(k, v)
		}
		sep := "?"
		if strings.Contains(req.URL, "?") {
			sep = "&"
		}
		req.URL += sep + extra.Encode()
	}
	return req
}
