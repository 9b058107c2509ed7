package main_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser is one headless Chromium, driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context
	// shots is where screenshots go: docs/screenshots with
	// WRIT_SCREENSHOTS=1 (make screenshots), a temporary directory otherwise.
	shots string
}

// startBrowser starts Debian's chromium. Without it the test is skipped,
// except under CI=true, where a missing browser fails.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed: `make deps` installs the Debian package chromium")
		}
		t.Skip("chromium is not installed (make deps installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.Flag("lang", "en-US"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	shots := t.TempDir()
	if os.Getenv("WRIT_SCREENSHOTS") != "" {
		shots = filepath.Join("..", "..", "docs", "screenshots")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &browser{t: t, ctx: ctx, shots: shots}
}

// run runs actions with a deadline, failing the test with what was doing.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	// A bound on waiting, not a delay: under make test the browser shares
	// two cores with every package's tests, and a step that takes 2 s alone
	// took more than 15 s there.
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var url, body string
		chromedp.Run(b.ctx, chromedp.Location(&url), chromedp.Evaluate(`document.body ? document.body.innerText.slice(0, 2000) : ""`, &body))
		b.t.Fatalf("%s: %v\n(at %s)\n%s", what, err, url, body)
	}
}

// eval evaluates a JavaScript expression, awaiting a promise.
func (b *browser) eval(what, js string, out any) {
	b.t.Helper()
	b.run(what, chromedp.Evaluate(js, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run("reading "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// shoot saves full-page screenshots of the current page at 1280 px and at a
// phone's 390 px, then goes back to 1280.
func (b *browser) shoot(name string) {
	b.t.Helper()
	for _, w := range []struct {
		suffix string
		width  int64
		height int64
		mobile bool
	}{{"", 1280, 900, false}, {"-phone", 390, 844, true}} {
		var png []byte
		emulate := chromedp.EmulateViewport(w.width, w.height)
		if w.mobile {
			emulate = chromedp.EmulateViewport(w.width, w.height, chromedp.EmulateMobile, chromedp.EmulateScale(2))
		}
		b.run("screenshot "+name+w.suffix, emulate, chromedp.Sleep(100*time.Millisecond), chromedp.FullScreenshot(&png, 100))
		// Nothing may push the page wider than the screen: a phone would
		// have to scroll sideways to read it.
		var over struct{ Scroll, Client int }
		b.eval("width of "+name+w.suffix, `({Scroll: document.documentElement.scrollWidth, Client: document.documentElement.clientWidth})`, &over)
		if over.Scroll > over.Client {
			b.t.Errorf("%s at %d px: the page is %d px wide, wider than the %d px screen", name, w.width, over.Scroll, over.Client)
		}
		if err := os.WriteFile(filepath.Join(b.shots, name+w.suffix+".png"), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.run("viewport back to 1280", chromedp.EmulateViewport(1280, 900))
}

// checkAccessible fails on a page with a form control that has no label,
// and checks that keyboard focus is visible.
func (b *browser) checkAccessible(page string) {
	b.t.Helper()
	var unlabelled []string
	b.eval("labels on "+page, `[...document.querySelectorAll("input:not([type=hidden]), select, textarea")]
		.filter(e => !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby"))
		.map(e => e.outerHTML)`, &unlabelled)
	if len(unlabelled) > 0 {
		b.t.Errorf("%s: controls without a label: %v", page, unlabelled)
	}
	var buttons []string
	b.eval("button names on "+page, `[...document.querySelectorAll("button, a[href]")].filter(e => !e.textContent.trim() && !e.getAttribute("aria-label")).map(e => e.outerHTML)`, &buttons)
	if len(buttons) > 0 {
		b.t.Errorf("%s: buttons or links without a name: %v", page, buttons)
	}
}
