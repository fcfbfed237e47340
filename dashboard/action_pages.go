package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/natscoord/natscoord/kvledger"
)

type confirmData struct {
	common
	Action, Question string
	Bucket, Key      string // query-escaped, so any bytes survive the form
	Rev              uint64 // the task's revision the question shows (0: none)
	CSRF             string
	Back             string
}

// confirmPage asks before an action; only its form's POST acts.
func (h *Handler) confirmPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	action, key, bucket := q.Get("do"), q.Get("key"), q.Get("bucket")
	if !h.offered(action) {
		h.fail(w, r, http.StatusForbidden, fmt.Sprintf("the action %q is not offered here (read-only, or no task runtime)", action))
		return
	}
	if key == "" {
		h.fail(w, r, http.StatusBadRequest, "no key given")
		return
	}
	d := confirmData{common: h.common(r, "Confirm", ""), Action: action, Key: keyRef(key), Bucket: keyRef(bucket), CSRF: h.csrf}
	switch action {
	case actRelease:
		d.Back = h.cfg.Prefix + "/coord"
		holder := "nobody (it is not held now)"
		for i, b := range h.cfg.LeaseBuckets {
			if b == bucket {
				if l, ok := h.leases[i].get(key); ok {
					holder = fmt.Sprintf("%s on %s (pid %d, fence %d)", displayKey(l.Holder), displayKey(l.Host), l.PID, l.Fence)
				}
			}
		}
		d.Question = fmt.Sprintf("Delete the lease %s in bucket %s, held by %s? The holder is not asked: it learns at its next renewal that it lost the lease.",
			displayKey(key), displayKey(bucket), holder)
	case actReopen:
		d.Back = h.cfg.Prefix + "/task?key=" + keyRef(key)
		d.Question = fmt.Sprintf("Reopen task %s so that it runs again?", displayKey(key))
	case actCancel:
		d.Back = h.cfg.Prefix + "/task?key=" + keyRef(key)
		d.Question = fmt.Sprintf("Cancel task %s so that no worker runs it?", displayKey(key))
	case actRemove:
		d.Back = h.cfg.Prefix + "/task?key=" + keyRef(key)
		d.Question = fmt.Sprintf("Remove the record of task %s? Its key can then be admitted again.", displayKey(key))
	case actRunNow:
		d.Back = h.cfg.Prefix + "/task?key=" + keyRef(key)
		d.Question = fmt.Sprintf("Run task %s now instead of at its time? Its attempts stay as they are.", displayKey(key))
	case actPause:
		d.Back = h.cfg.Prefix + "/"
		d.Question = fmt.Sprintf("Pause kind %s? Workers start none of its tasks until it is resumed; running ones finish.", displayKey(key))
	case actResume:
		d.Back = h.cfg.Prefix + "/"
		d.Question = fmt.Sprintf("Resume kind %s? Workers start its ready tasks at once.", displayKey(key))
		if p, ok := h.pauses.get(key); ok {
			d.Rev = p.Rev
		}
	}
	if action != actRelease && action != actPause && action != actResume {
		// Say what the task is now, as the bulk dry run does; the form
		// carries its revision, so the action is refused if the task
		// moves before the confirm.
		if s, ok := h.tasks.get(kvledger.IdempotencyKey(key)); ok {
			d.Question += fmt.Sprintf(" It is %s now.", s.Phase(h.cfg.Clock.Now()))
			d.Rev = s.Rev
		}
	}
	h.render(w, "confirm", "base", http.StatusOK, d)
}

// actPost performs a confirmed action and sends the browser back to where
// the action shows.
func (h *Handler) actPost(w http.ResponseWriter, r *http.Request) {
	if status, msg := h.checkAction(r); status != 0 {
		h.fail(w, r, status, msg)
		return
	}
	if !h.natsUp() {
		h.fail(w, r, http.StatusServiceUnavailable, unreachable)
		return
	}
	action := r.PostFormValue("do")
	if !h.offered(action) {
		h.fail(w, r, http.StatusForbidden, fmt.Sprintf("the action %q is not offered here", action))
		return
	}
	actor := h.cfg.Actor
	if u, _, ok := r.BasicAuth(); ok && h.cfg.BasicAuth.User != "" {
		actor += ":" + u
	}
	if r.PostFormValue("bulk") != "" {
		if !slices.Contains(h.taskActions(), action) {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%s is not a bulk action", action))
			return
		}
		h.bulkPost(w, r, action, actor)
		return
	}
	key, err1 := url.QueryUnescape(r.PostFormValue("key"))
	bucket, err2 := url.QueryUnescape(r.PostFormValue("bucket"))
	var rev uint64
	var err3 error
	if v := r.PostFormValue("rev"); v != "" {
		rev, err3 = strconv.ParseUint(v, 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil || key == "" {
		h.fail(w, r, http.StatusBadRequest, "malformed key")
		return
	}
	ctx, cancel := h.cfg.opCtx(r.Context())
	defer cancel()
	rec, err := h.act(ctx, actor, action, bucket, key, rev)
	done := url.Values{}
	if err != nil {
		done.Set("done", fmt.Sprintf("failed: %s %s: %v", action, displayKey(key), err))
	} else {
		done.Set("done", fmt.Sprintf("%s %s: done", action, displayKey(key)))
	}
	back := h.cfg.Prefix + "/coord?" + done.Encode()
	if action == actPause || action == actResume {
		back = h.cfg.Prefix + "/?" + done.Encode()
	}
	if rec.Task {
		done.Set("key", key)
		back = h.cfg.Prefix + "/task?" + done.Encode()
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
