//go:build long

package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hookpack/hookpack/pkg/local/awstest"
	"github.com/hookpack/hookpack/pkg/local/devstack"
	"github.com/hookpack/hookpack/pkg/local/logtest"
)

// TestConsoleInBrowser drives the console in Chromium over a local stack
// as `make run` serves it: events delivered show on the overview as it
// reloads itself; one the target refuses is found by its sender's id,
// dead-lettered, replayed from its page after a dry run and delivered
// once; a POST without the CSRF token, a request naming another host and
// a console beyond loopback without its token are refused; and no secret
// of the tenants file or signature reaches a page. HOOKPACK_SCREENSHOT=dir
// writes the dead-lettered event's page there as console.png
// (docs/console.png).
func TestConsoleInBrowser(t *testing.T) {
	chrome := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n := awstest.Name(t)
	name := "con" + n[len(n)-9:]
	tenants := filepath.Join(awstest.ModuleRoot(), "events", "tenants.json")
	logFile := filepath.Join(t.TempDir(), "functions.log")
	s, err := devstack.Start(ctx, devstack.Options{Name: name, TenantsFile: tenants, Addr: "127.0.0.1:0", TargetAddr: "127.0.0.1:0",
		Endpoint: awstest.Moto(t), DynamoDBEndpoint: awstest.DynamoDBLocal(t), LogFile: logFile})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.ServeBackground(ctx)()
	local := []string{"-local", "-name", name, "-endpoint", s.Endpoint, "-dynamodb-endpoint", s.DynamoDBEndpoint, "-log-file", logFile, "-refresh", "1s"}
	base := startConsole(ctx, t, append(local, "-addr", "127.0.0.1:0")...)
	if u, _ := url.Parse(base); u.Hostname() != "127.0.0.1" || u.Query().Get("token") != "" {
		t.Fatalf("console printed %s, want a loopback URL without a token", base)
	}

	b := browser(ctx, t, chrome)
	// Every JavaScript confirm (a move, a pause) is accepted, and counted.
	dialogs := chromedp.Events(b, page.JavascriptDialogOpening)
	confirms := make(chan string, 16)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			confirms <- ev.Message
			_, _ = chromedp.Call(b, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	// confirmed checks that the last action asked want (the events come on
	// a goroutine of their own, maybe after the action returned).
	confirmed := func(want string) {
		t.Helper()
		select {
		case got := <-confirms:
			if got != want {
				t.Errorf("the page asked %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the page asked no confirmation, want %q", want)
		}
	}
	var pages []string // every page's HTML, searched for secrets at the end
	// step bounds one browser action, so a hang names its line.
	step := func() context.Context {
		sctx, cancel := context.WithTimeout(b, 30*time.Second)
		t.Cleanup(cancel)
		return sctx
	}
	html := func() string {
		t.Helper()
		h, err := chromedp.Run(step(), chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, h)
		return h
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(step(), steps...); err != nil {
			t.Fatalf("browser: %v", err)
		}
	}
	textOf := func(id string) string {
		t.Helper()
		v, err := chromedp.Run(step(), chromedp.Text(chromedp.ID(id)))
		if err != nil {
			t.Fatalf("browser: #%s: %v", id, err)
		}
		return v
	}
	// poll waits for a JavaScript condition on the page as it reloads
	// itself (the overview) or as the test reloads it.
	poll := func(js string, reload bool) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			ok, err := chromedp.Run(step(), chromedp.Evaluate[bool](js))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waited 45 s for %s (%v):\n%s", js, err, text(html()))
			}
			time.Sleep(300 * time.Millisecond)
			if reload {
				do(chromedp.Reload())
			}
		}
	}

	// The overview, open before anything is delivered, shows the
	// dead letter once it exists, by reloading itself.
	do(chromedp.Navigate(base))
	do(chromedp.WaitVisible(chromedp.ID("tenant-demo")))
	html()
	if got := textOf("tenant-demo"); !strings.Contains(got, "demo") {
		t.Fatalf("overview's demo section = %q", got)
	}
	// The target refuses one event (400: permanent), takes the others.
	rule := s.Target.AddRule(devstack.Rule{Event: "e2e-refused", Status: 400})
	var sigs []string
	for i, id := range []string{"e2e-ok-1", "e2e-ok-2", "e2e-refused"} {
		sigs = append(sigs, deliver(t, s.URL(), id, i))
	}
	poll(`document.querySelector("#tenant-demo .deadletters").textContent === "1"`, false)
	html()

	// Found by the id its sender shows (GitHub's X-GitHub-Delivery).
	do(chromedp.SetValue(chromedp.CSS(`#search input[name="tenant"]`), "demo"),
		chromedp.SetValue(chromedp.CSS(`#search input[name="id"]`), "e2e-refused"),
		chromedp.Submit(chromedp.CSS("#search")))
	do(chromedp.WaitVisible(chromedp.ID("state")))
	if got := textOf("state"); got != "DEAD LETTERED" {
		t.Fatalf("event state = %q, want DEAD LETTERED\n%s", got, text(html()))
	}
	if h := html(); !strings.Contains(h, "answered 400 Bad Request") || !strings.Contains(h, "received: accepted 200, eventId e2e-refused") {
		t.Errorf("the event page lacks its reason or its delivery:\n%s", text(h))
	}
	if shot := os.Getenv("HOOKPACK_SCREENSHOT"); shot != "" {
		screenshot(t, b, filepath.Join(shot, "console.png"))
	}
	// Its body only when asked for.
	if h := html(); strings.Contains(h, "full_name") {
		t.Errorf("the event page shows the body before it is asked for:\n%s", text(h))
	}
	do(chromedp.Click(chromedp.ID("show-body")))
	do(chromedp.WaitVisible(chromedp.ID("body")))
	if got := textOf("body"); !strings.Contains(got, `"full_name": "octo/console"`) {
		t.Errorf("body page shows %q, want the delivery's body", got)
	}
	html()
	do(chromedp.Navigate(base + "event?tenant=demo&id=e2e-refused"))
	do(chromedp.WaitVisible(chromedp.ID("replay-event")))

	// The target is fixed; the replay's dry run lists that one message.
	s.Target.RemoveRule(rule)
	do(chromedp.Click(chromedp.ID("replay-event")))
	do(chromedp.WaitVisible(chromedp.ID("move")))
	h := html()
	if got := strings.Count(h, `<tr class="would_move">`); got != 1 || !strings.Contains(h, "Move these 1 message(s)") || !strings.Contains(h, "nothing has moved") {
		t.Fatalf("dry run lists %d message(s) to move, want 1:\n%s", got, text(h))
	}
	if n := applied(s, "e2e-refused"); n != 0 {
		t.Fatalf("target applied e2e-refused %d time(s) after the dry run, want 0", n)
	}
	// The confirmation asks once more (a JavaScript confirm), then moves.
	do(chromedp.Click(chromedp.ID("move")))
	do(chromedp.WaitVisible(chromedp.ID("moved")))
	if got := textOf("moved"); !strings.HasPrefix(got, "1 message(s) of demo moved back to its queue") {
		t.Fatalf("redrive page says %q", got)
	}
	confirmed("Move 1 message(s) back to the queue of demo?")
	html()
	do(chromedp.Click(chromedp.ID("follow")))
	do(chromedp.WaitVisible(chromedp.ID("state")))
	poll(`document.getElementById("state").textContent === "DONE"`, true)
	html()
	if n := applied(s, "e2e-refused"); n != 1 {
		t.Errorf("target applied e2e-refused %d time(s), want once", n)
	}
	for _, id := range []string{"e2e-ok-1", "e2e-ok-2"} {
		if n := applied(s, id); n != 1 {
			t.Errorf("target applied %s %d time(s), want once", id, n)
		}
	}
	// The chart counts the three deliveries.
	do(chromedp.Navigate(base + "chart?tenant=demo"))
	do(chromedp.WaitVisible(chromedp.ID("total")))
	if got := textOf("total"); got != "3" {
		t.Errorf("chart counts %s deliveries, want 3", got)
	}
	if h := html(); strings.Count(h, `<td><a href="/event?tenant=demo&amp;id=demo%23github%23`) != 3 {
		t.Errorf("the latest deliveries do not link the three events:\n%s", text(h))
	}
	do(chromedp.Navigate(base + "dead-letters"))
	do(chromedp.WaitVisible(chromedp.ID("count")))
	html()

	// A destination paused and resumed from the overview (package
	// destination, as make pause and make resume do).
	row := "#destination-relay-billing"
	do(chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(row)))
	do(chromedp.SetValue(chromedp.CSS(row+` input[name="reason"]`), "e2e maintenance"), chromedp.Click(chromedp.CSS(row+" button.pause")))
	do(chromedp.WaitVisible(chromedp.ID("done")))
	confirmed("Pause destination billing of relay? Its events wait on the queue until it is resumed.")
	if got := textOf("done"); !strings.HasPrefix(got, "paused relay/billing: paused since") || !strings.Contains(got, "by operator: e2e maintenance") {
		t.Errorf("pause says %q", got)
	}
	do(chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS(row+" button.resume")))
	if h := html(); !strings.Contains(h, "by operator: e2e maintenance") {
		t.Errorf("the overview does not show billing paused:\n%s", text(h))
	}
	do(chromedp.Click(chromedp.CSS(row + " button.resume")))
	do(chromedp.WaitVisible(chromedp.ID("done")))
	confirmed("Resume destination billing of relay? Its waiting events are delivered in order.")
	if got := textOf("done"); !strings.HasPrefix(got, "resumed relay/billing, which was paused since") {
		t.Errorf("resume says %q", got)
	}

	// A state change without the page's CSRF token is refused.
	resp, body := post(t, base+"redrive", url.Values{"tenant": {"demo"}, "message": {"x"}}, "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "missing or wrong CSRF token") {
		t.Errorf("POST /redrive without a CSRF token = %d %s, want 403 naming the token", resp.StatusCode, text(body))
	}
	// Loopback by default: a request for another name is refused (DNS
	// rebinding), and a console beyond loopback wants its token.
	resp, body = get(t, base, "attacker.example")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not a loopback name") {
		t.Errorf("GET / with Host attacker.example = %d %s, want 403", resp.StatusCode, text(body))
	}
	open := startConsole(ctx, t, append(local, "-addr", "0.0.0.0:0")...)
	u, _ := url.Parse(open)
	token := u.Query().Get("token")
	u.RawQuery = ""
	if resp, body = get(t, u.String(), ""); token == "" || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("console on 0.0.0.0 printed %s; GET without the token = %d %s, want a token and 401", open, resp.StatusCode, text(body))
	}
	if resp, _ = get(t, open, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s = %d, want 200", open, resp.StatusCode)
	}

	// No secret of the tenants file, and no signature, on any page.
	for _, path := range []string{"", "dead-letters", "chart?tenant=relay", "event?tenant=demo&id=e2e-ok-1"} {
		_, body := get(t, base+path, "")
		pages = append(pages, body)
	}
	secrets := append(secretsOf(t, tenants), sigs...)
	for _, p := range pages {
		for _, sec := range secrets {
			if strings.Contains(p, sec) {
				t.Errorf("a page holds the secret or signature %q:\n%s", sec, text(p))
			}
		}
	}
}

// chromium returns the browser's path: CHROME_PATH or chromium on PATH. A
// missing browser fails the test under CI=true and skips it otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("CHROME_PATH"), "chromium", "chromium-browser"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	const why = "no Chromium (CHROME_PATH, or chromium on PATH): scripts/install-chromium.sh installs it"
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
	return ""
}

// browser starts a headless Chromium for the test.
func browser(ctx context.Context, t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1280, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to sandbox as root
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	b, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// Started here, so that each action's own timeout ends the action, not
	// the browser.
	if err := chromedp.Do(b); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return b
}

// startConsole runs the command with args until the test ends and returns
// the URL it prints.
func startConsole(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, errOut := &logtest.Buffer{}, &logtest.Buffer{}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() { done <- run(cctx, args, out, errOut) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("console %v exited %d: %s", args, code, errOut)
		}
	})
	re := regexp.MustCompile(`http://\S+`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindString(out.String()); m != "" {
			return m
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("console %v exited %d: %s%s", args, code, out, errOut)
		default:
		}
	}
	t.Fatalf("console %v printed no URL: %s%s", args, out, errOut)
	return ""
}

// deliver posts a GitHub "issues" delivery with sender id id to the demo
// tenant, signed with its secret, and returns the signature header's
// value.
func deliver(t *testing.T, api, id string, n int) string {
	t.Helper()
	body := fmt.Sprintf(`{"action":"opened","issue":{"number":%d},"repository":{"full_name":"octo/console"}}`, 100+n)
	mac := hmac.New(sha256.New, []byte("demo-github-secret"))
	mac.Write([]byte(body))
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	req, _ := http.NewRequest(http.MethodPost, api+"/webhooks/demo/github", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", sig)
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"accepted"`) {
		t.Fatalf("POST %s = %d %s, want 200 accepted", id, resp.StatusCode, b)
	}
	return strings.TrimPrefix(sig, "sha256=")
}

// applied counts the target's deliveries of the event id.
func applied(s *devstack.Stack, id string) int {
	n := 0
	for _, a := range s.Target.Applied() {
		if a.EventID == id {
			n++
		}
	}
	return n
}

func get(t *testing.T, u, host string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if host != "" {
		req.Host = host
	}
	return send(t, req)
}

func post(t *testing.T, u string, form url.Values, host string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if host != "" {
		req.Host = host
	}
	return send(t, req)
}

func send(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// secretsOf returns every value under a "secrets", "secret" or "*token"
// key of the tenants file: what no page may show.
func secretsOf(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any, secret bool)
	walk = func(v any, secret bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				k = strings.ToLower(k)
				walk(x, secret || strings.Contains(k, "secret") || strings.HasSuffix(k, "token"))
			}
		case []any:
			for _, x := range v {
				walk(x, secret)
			}
		case string:
			if secret && len(v) >= 8 {
				out = append(out, v)
			}
		}
	}
	walk(v, false)
	if len(out) < 40 {
		t.Fatalf("found %d secrets in %s, want the demo tenant's (at least 40)", len(out), path)
	}
	return out
}

// screenshot writes the page as a PNG of its 256 most frequent colours
// (a page of text has few: the file is a third of Chromium's).
func screenshot(t *testing.T, b context.Context, path string) {
	t.Helper()
	raw, err := chromedp.Run(b, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	bounds := img.Bounds()
	count := map[color.RGBA]int{}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			count[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	colors := slices.SortedFunc(maps.Keys(count), func(a, b color.RGBA) int { return count[b] - count[a] })
	pal := make(color.Palette, min(len(colors), 256))
	for i := range pal {
		pal[i] = colors[i]
	}
	out := image.NewPaletted(bounds, pal)
	draw.Draw(out, bounds, img, bounds.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// text is an HTML page's text, for failure messages.
func text(html string) string {
	if i := strings.Index(html, "<main>"); i >= 0 {
		html = html[i:]
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(html, " ")), " ")
}
