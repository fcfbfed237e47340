package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/natscoord/natscoord/kvledger"
)

// A bulk action reopens, cancels or removes the tasks named by key or
// chosen by a filter (phase, kind, key prefix), as the CLI's `natscoord
// ledger reopen|cancel|rm` do. Its confirmation page is the dry run: it
// lists each chosen task with its phase and what would happen to it, and
// its form carries exactly the tasks listed, each as its key and the
// revision the page showed. Each is then the ledger's own compare-and-set
// at that revision through Config.Tasks (kvledger.AtRevision), so a task
// that moved since the listing (reopened and completed again, say) is
// refused and named, never acted on, and each change leaves an event.

// maxBulk bounds the tasks one bulk action lists and changes; a larger
// selection is acted on a page at a time.
const maxBulk = 500

// bulkRow is one task of a bulk action's dry run.
type bulkRow struct {
	Key    string // the key, query-escaped for the form
	Rev    uint64 // the record's revision listed, which the action is bound to
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
				row.Phase, row.Rev = s.Phase(f.Now), s.Rev
			}
			d.Rows = append(d.Rows, h.would(d.Action, k, row, ok))
		}
	} else {
		// A filter chooses only the tasks the action applies to, as the
		// CLI's filters do.
		f.Only = func(p kvledger.Phase) bool { return appliesTo(d.Action, p) }
		p := h.tasks.page(f, 0, maxBulk)
		d.More = p.Next > 0
		for _, s := range p.Rows {
			d.Rows = append(d.Rows, h.would(d.Action, string(s.Key), bulkRow{Key: keyRef(string(s.Key)), Rev: s.Rev, Shown: displayKey(string(s.Key)), Phase: s.Phase(f.Now)}, true))
		}
	}
	for _, row := range d.Rows {
		if row.Change {
			d.Changes++
		}
	}
	h.render(w, "bulk", "base", http.StatusOK, d)
}

// would fills in what action would do to row's task, key: an rm of a
// task that a pending or running task needs is kept, as the ledger's
// Delete keeps it (the view's dependents say which).
func (h *Handler) would(action, key string, row bulkRow, found bool) bulkRow {
	switch {
	case !found:
	case !appliesTo(action, row.Phase):
		row.Would = fmt.Sprintf("cannot %s a task that is %s", action, row.Phase)
	case action == actRemove:
		if deps := h.tasks.neededBy(kvledger.IdempotencyKey(key)); len(deps) > 0 {
			names := make([]string, 0, len(deps))
			for _, d := range deps[:min(len(deps), 10)] {
				names = append(names, displayKey(string(d)))
			}
			if len(deps) > 10 {
				names = append(names, fmt.Sprintf("and %d more", len(deps)-10))
			}
			row.Would = "kept: needed by " + strings.Join(names, ", ") + ", not ended yet"
			break
		}
		fallthrough
	default:
		row.Would, row.Change = "would "+action, true
	}
	return row
}

// bulkTask is one task of a confirmed bulk action: its key and the
// revision the dry run listed.
type bulkTask struct {
	key string
	rev uint64
}

// bulkTasks reads the tasks of a bulk form: each "task" field is
// "<revision>:<query-escaped key>", as the dry run wrote it.
func bulkTasks(form url.Values) ([]bulkTask, error) {
	if len(form["task"]) == 0 && len(form["key"]) > 0 {
		return nil, errors.New("the form names no revision of its tasks: show the dry run again")
	}
	var out []bulkTask
	for _, v := range form["task"] {
		r, k, ok := strings.Cut(v, ":")
		rev, err := strconv.ParseUint(r, 10, 64)
		key, kerr := url.QueryUnescape(k)
		if !ok || err != nil || rev == 0 || kerr != nil || key == "" {
			return nil, errors.New("malformed task")
		}
		out = append(out, bulkTask{key: key, rev: rev})
	}
	return out, nil
}

// bulkPost carries out a confirmed bulk action on the tasks its form
// lists, each in its own bounded call at the revision listed, and reports
// how many changed and why each other did not.
func (h *Handler) bulkPost(w http.ResponseWriter, r *http.Request, action, actor string) {
	tasks, err := bulkTasks(r.PostForm)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if len(tasks) == 0 || len(tasks) > maxBulk {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("a bulk action takes 1 to %d tasks", maxBulk))
		return
	}
	var failed []string
	for _, t := range tasks {
		ctx, cancel := h.cfg.opCtx(r.Context())
		_, err := h.act(ctx, actor, action, "", t.key, t.rev)
		cancel()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", displayKey(t.key), err))
		}
		if r.Context().Err() != nil {
			break
		}
	}
	msg := fmt.Sprintf("%s: %d of %d task(s) done", action, len(tasks)-len(failed), len(tasks))
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
