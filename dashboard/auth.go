package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/natscoord/natscoord/internal/hostcheck"
)

// tokenCookie carries Config.Token for a browser after it visited a page
// with ?token=.
const tokenCookie = "natscoord_ui_token"

// authenticate wraps next with Config.Token and Config.BasicAuth checks;
// without either, with the Host check that stops DNS rebinding.
func (h *Handler) authenticate(next http.Handler) http.Handler {
	if h.cfg.Token == "" && h.cfg.BasicAuth.User == "" {
		return h.checkHost(next)
	}
	cookie := cookieValue(h.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A Bearer token is a whole credential: the Authorization header
		// cannot carry it and basic auth at once, so with both configured
		// a client that presents the token is not asked for basic auth.
		if t := h.cfg.Token; t != "" {
			if b, ok := bearer(r); ok {
				if !equal(b, t) {
					http.Error(w, "wrong token", http.StatusUnauthorized)
					return
				}
				next.ServeHTTP(w, r)
				return
			}
		}
		if u := h.cfg.BasicAuth.User; u != "" {
			user, pass, ok := r.BasicAuth()
			if !ok || !equal(user, u) || !equal(pass, h.cfg.BasicAuth.Password) {
				w.Header().Set("WWW-Authenticate", `Basic realm="natscoord", charset="UTF-8"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if t := h.cfg.Token; t != "" {
			if q := r.URL.Query().Get("token"); q != "" && r.Method == http.MethodGet {
				if !equal(q, t) {
					http.Error(w, "wrong token", http.StatusUnauthorized)
					return
				}
				http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: cookie, Path: h.cfg.Prefix + "/",
					HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
				u := *r.URL
				qs := u.Query()
				qs.Del("token")
				u.RawQuery = qs.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			if c, err := r.Cookie(tokenCookie); err != nil || !equal(c.Value, cookie) {
				http.Error(w, "token required: send Authorization: Bearer <token> or open any page with ?token=<token>", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
		return a[7:], true
	}
	return "", false
}

// cookieValue is what the token cookie holds: an HMAC of a fixed label
// keyed by the token, so a cookie read from a browser's store or a log
// proves a visit but does not reveal the token (which also opens the
// API with a Bearer header, and may be used elsewhere).
func cookieValue(token string) string {
	if token == "" {
		return ""
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("natscoord dashboard cookie v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// checkHost refuses a request whose Host is not a loopback name or one
// of Config.AllowedHosts (hostcheck.Handler, natscoord's one Host check):
// an unauthenticated dashboard trusts whoever reaches it, and a page of
// another site whose name was re-pointed at 127.0.0.1 (DNS rebinding)
// reaches it too, but names that site in Host.
func (h *Handler) checkHost(next http.Handler) http.Handler {
	return hostcheck.Handler(next, h.cfg.AllowedHosts, "a dashboard without a token or basic auth")
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// newCSRFToken returns the handler's CSRF token: random per handler,
// embedded in its forms, which only a same-origin page can read.
func newCSRFToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// checkAction refuses a cross-origin request (Sec-Fetch-Site, Origin) and
// one without the handler's CSRF token.
func (h *Handler) checkAction(r *http.Request) (int, string) {
	if r.Method != http.MethodPost {
		return http.StatusMethodNotAllowed, "actions are POST only"
	}
	if err := h.cop.Check(r); err != nil {
		return http.StatusForbidden, "cross-origin request refused"
	}
	if !equal(r.PostFormValue("csrf"), h.csrf) {
		return http.StatusForbidden, "missing or wrong CSRF token: reload the page and confirm again"
	}
	return 0, ""
}
