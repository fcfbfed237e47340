package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticEmbed embed.FS

// staticFS serves static/ under /static/.
var staticFS fs.FS = staticEmbed

// pages holds one template set per page (each defines "content").
type pages struct {
	sets map[string]*template.Template
}

// pageNames are the templates that are whole pages.
var pageNames = []string{"overview", "tasks", "task", "graph", "coord", "events", "confirm", "error", "bulk", "workers"}

func parsePages(prefix string, clk clock.Clock) (*pages, error) {
	p := &pages{sets: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(baseFuncs(prefix, clk)).ParseFS(templateFS, "templates/base.html", "templates/partials.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: templates: %w", err)
		}
		p.sets[name] = t
	}
	return p, nil
}

// baseFuncs are the template helpers; u prefixes a path with the mount
// prefix; ago and until read clk (Config.Clock).
func baseFuncs(prefix string, clk clock.Clock) template.FuncMap {
	return template.FuncMap{
		"u":    func(p string) string { return prefix + p },
		"show": func(k any) string { return displayKey(fmt.Sprint(k)) },
		// ref is typed as a URL so that html/template, which escapes a
		// plain string in a query again (% -> %25), keeps it as it is;
		// QueryEscape's output needs no escaping in any context.
		"ref": func(k any) template.URL { return template.URL(keyRef(fmt.Sprint(k))) },
		"clock": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.Local().Format("15:04:05.000")
		},
		"ago": func(t time.Time) string { return clk.Now().Sub(t).Round(time.Second).String() },
		"ms":  func(t time.Time) int64 { return t.UnixMilli() },
		"until": func(t time.Time) string {
			d := t.Sub(clk.Now()).Round(100 * time.Millisecond)
			if d < 0 {
				return "due"
			}
			return d.String()
		},
		"evclass":    func(name string) string { return strings.TrimPrefix(name, "ledger.") },
		"errtext":    errText,
		"maxPayload": func() int { return maxPayloadShown },
		"minute":     func(t time.Time) string { return t.Local().Format("15:04") },
	}
}

// common is what every page's layout needs.
type common struct {
	Title, Nav string
	Ledger     string
	ReadOnly   bool
	Flash      string
	FlashClass string
	NATSDown   bool
}

func (h *Handler) common(r *http.Request, title, nav string) common {
	c := common{Title: title, Nav: nav, Ledger: h.cfg.Ledger, ReadOnly: h.cfg.ReadOnly, NATSDown: !h.natsUp()}
	if f := r.URL.Query().Get("done"); f != "" {
		c.Flash, c.FlashClass = f, "ok"
		if strings.HasPrefix(f, "failed") {
			c.FlashClass = "bad"
		}
	}
	return c
}

// render executes template tmpl of page into w, buffered so an error
// never leaves half a page.
func (h *Handler) render(w http.ResponseWriter, page, tmpl string, status int, data any) {
	var b bytes.Buffer
	err := h.pages.sets[page].ExecuteTemplate(&b, tmpl, data)
	if err == nil {
		{
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(status)
			_, _ = w.Write(b.Bytes())
			return
		}
	}
	h.cfg.Logger.Error("dashboard: render", "page", page, "err", err)
	http.Error(w, "render failed", http.StatusInternalServerError)
}

// fail renders the error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, "error", "base", status, struct {
		common
		Message string
	}{h.common(r, http.StatusText(status), ""), msg})
}

// unreachable is what a page that must read from NATS says while the
// connection is down.
const unreachable = "NATS is unreachable: the dashboard cannot read this now. Lists and counts show the last known state; this page works again once the connection is back."

// keyParam reads a query-escaped key parameter; url.Values already
// decoded it, so any byte sequence arrives intact.
func keyParam(r *http.Request, name string) (kvledger.IdempotencyKey, bool) {
	k := r.URL.Query().Get(name)
	return kvledger.IdempotencyKey(k), k != ""
}

func atoiDefault(s string, d uint64) uint64 {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return n
	}
	return d
}
