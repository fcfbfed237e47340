package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

// A bulk action reopens, cancels or removes the tasks named by key or
// chosen by a filter (phase, kind, key prefix), as the CLI's `natscoord
// ledger reopen|cancel|rm` do. Its confirmation page is the dry run: it
// lists each chosen task with its phase and what would happen to it, and
// its form carries exactly the keys listed. Each key is then the ledger's
// own compare-and-set through Config.Tasks, so a task that moved since
// the listing is refused, never overwritten, and each leaves an event.

// maxBulk bounds the tasks one bulk action lists and changes; a larger
// selection is acted on a page at a time.
const maxBulk = 500

// bulkRow is one task of a bulk action's dry run.
type bulkRow struct {
	Key    string // the key, query-escaped for the form
	Shown  string // the key as displayed
	Phase  kvledger.Phase
	Would  string // "would <verb>", or why it would not
	Change bool
}

type bulkData struct {
	common
	Action  string
	Actions []string
	Phases  []kvledger.Phase
	Filter  taskFilter
	Keys    string
	Rows    []bulkRow
	Changes int
	More    bool // the selection has more tasks than maxBulk
	CSRF    string
	Preview bool
}

// taskActions are the task actions this dashboard offers, in order.
func (h *Handler) taskActions() []string {
	var out []string
	for _, a := range []string{actReopen, actRunNow, actCancel, actRemove} {
		if h.offered(a) {
			out = append(out, a)
		}
	}
	return out
}

// bulkPage shows the bulk form and, once it names an action and tasks,
// the dry run with the form that carries it out.
func (h *Handler) bulkPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := bulkData{common: h.common(r, "Bulk actions", "bulk"), Action: q.Get("do"), Actions: h.taskActions(),
		Phases: kvledger.Phases, Keys: q.Get("keys"), CSRF: h.csrf}
	if len(d.Actions) == 0 {
		h.fail(w, r, http.StatusForbidden, "no task action is offered here (read-only, or no task runtime)")
		return
	}
	f, err := h.filterOf(q)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	d.Filter = f
	if d.Action == "" {
		h.render(w, "bulk", "base", http.StatusOK, d)
		return
	}
	if !slices.Contains(d.Actions, d.Action) {
		h.fail(w, r, http.StatusForbidden, fmt.Sprintf("the action %q is not offered here", d.Action))
		return
	}
	keys := keyLines(d.Keys)
	filtered := f.Phase != "" || f.Kind != "" || f.Prefix != ""
	switch {
	case len(keys) > 0 && filtered:
		h.fail(w, r, http.StatusBadRequest, "name tasks by key or choose them with a filter, not both")
		return
	case len(keys) == 0 && !filtered:
		h.fail(w, r, http.StatusBadRequest, "name tasks by key or choose them with a filter (state, kind, prefix)")
		return
	case len(keys) > maxBulk:
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("at most %d keys at once", maxBulk))
		return
	}
	d.Preview = true
	if len(keys) > 0 {
		for _, k := range keys {
			s, ok := h.tasks.get(kvledger.IdempotencyKey(k))
			row := bulkRow{Key: keyRef(k), Shown: displayKey(k)}
			if !ok {
				row.Would = "no such task"
			} else {
				row.Phase = s.Phase(f.Now)
			}
			d.Rows = append(d.Rows, h.would(d.Action, row, ok))
		}
	} else {
		// A filter chooses only the tasks the action applies to, as the
		// CLI's filters do.
		f.Only = func(p kvledger.Phase) bool { return appliesTo(d.Action, p) }
		p := h.tasks.page(f, 0, maxBulk)
		d.More = p.Next > 0
		for _, s := range p.Rows {
			d.Rows = append(d.Rows, h.would(d.Action, bulkRow{Key: keyRef(string(s.Key)), Shown: displayKey(string(s.Key)), Phase: s.Phase(f.Now)}, true))
		}
	}
	for _, row := range d.Rows {
		if row.Change {
			d.Changes++
		}
	}
	h.render(w, "bulk", "base", http.StatusOK, d)
}

// would fills in what action would do to row's task.
func (h *Handler) would(action string, row bulkRow, found bool) bulkRow {
	switch {
	case !found:
	case appliesTo(action, row.Phase):
		row.Would, row.Change = "would "+action, true
	default:
		row.Would = fmt.Sprintf("cannot %s a task that is %s", action, row.Phase)
	}
	return row
}

// bulkPost carries out a confirmed bulk action on the keys its form
// lists, each in its own bounded call, and reports how many changed.
func (h *Handler) bulkPost(w http.ResponseWriter, r *http.Request, action, actor string) {
	var keys []string
	for _, k := range r.PostForm["key"] {
		key, err := url.QueryUnescape(k)
		if err != nil || key == "" {
			h.fail(w, r, http.StatusBadRequest, "malformed key")
			return
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 || len(keys) > maxBulk {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("a bulk action takes 1 to %d keys", maxBulk))
		return
	}
	var failed []string
	for _, key := range keys {
		ctx, cancel := h.cfg.opCtx(r.Context())
		_, err := h.act(ctx, actor, action, "", key, 0)
		cancel()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", displayKey(key), err))
		}
		if r.Context().Err() != nil {
			break
		}
	}
	msg := fmt.Sprintf("%s: %d of %d task(s) done", action, len(keys)-len(failed), len(keys))
	if len(failed) > 0 {
		if len(failed) > 10 {
			failed = append(failed[:10], fmt.Sprintf("and %d more (the dashboard's actions list has each)", len(failed)-10))
		}
		msg = "failed: " + msg + "; " + strings.Join(failed, "; ")
	}
	http.Redirect(w, r, h.cfg.Prefix+"/tasks?"+url.Values{"done": {msg}}.Encode(), http.StatusSeeOther)
}

// keyLines reads the keys of the bulk form, one a line (a key may hold
// spaces; blank lines are skipped).
func keyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSuffix(l, "\r")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
