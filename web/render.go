package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var assets embed.FS

// pages holds each page's template: the layout with that page's content.
type pages struct{ t map[string]*template.Template }

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		d := time.Since(t).Round(time.Second)
		if d < 0 {
			d = 0
		}
		return d.String() + " ago"
	},
	"labels": func(m map[string]string) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, k+"="+m[k])
		}
		return strings.Join(parts, ", ")
	},
	"join": func(s []string) string { return strings.Join(s, ", ") },
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"idx": func(p *uint64) string {
		if p == nil {
			return ""
		}
		return fmt.Sprint(*p)
	},
	"add":      func(a, b int) int { return a + b },
	"auditurl": auditLink,
	"short": func(h string) string {
		if len(h) > len("sha256:")+12 {
			return h[:len("sha256:")+12] + "…"
		}
		return h
	},
}

func parsePages() (*pages, error) {
	names, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	p := &pages{t: map[string]*template.Template{}}
	for _, e := range names {
		name := strings.TrimSuffix(e.Name(), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html", "templates/"+e.Name())
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

// view is what every page template gets.
type view struct {
	Title string
	Nav   string
	P     Principal
	// Signed is false on the sign-in page.
	Signed bool
	CSRF   string
	// Epoch and Seq are where this page's event stream resumes; Live lists
	// the event types that refresh its live regions.
	Epoch string
	Seq   uint64
	Live  string
	Can   map[string]bool
	Error string
	Data  any
}

func (d *Dashboard) render(w http.ResponseWriter, status int, name string, v view) {
	t, ok := d.pages.t[name]
	if !ok {
		http.Error(w, "no such template", http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		d.log.Error("dashboard: rendering", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	// Scripts only from this origin; the pages have no inline script, so
	// an injected one would not run.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
