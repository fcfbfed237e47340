// Package hostcheck is natscoord's one judgment of loopback names, used
// by every listener it opens: the dashboard (`natscoord ui`) and the
// worker's metrics (`natscoord work --metrics-listen`).
//
//	h := hostcheck.Handler(mux, cfg.AllowedHosts, "a dashboard without a token or basic auth")
//
// A listener that needs no credentials trusts whoever reaches it; a page
// of another site whose name was re-pointed at 127.0.0.1 (DNS rebinding)
// reaches it too, but names that site in Host. Handler refuses such a
// request with 421 Misdirected Request.
package hostcheck

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Loopback says whether host (a name or an address, with or without
// brackets, any case, with or without a trailing dot) is "localhost" or
// a loopback address (IPv4-mapped IPv6 included).
func Loopback(host string) bool {
	host = normalize(host)
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Allowed says whether hostport, a request's Host (with or without a
// port), is a loopback name or one of allowed (lower case, without a
// port).
func Allowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return Loopback(host) || slices.Contains(allowed, normalize(host))
}

// Handler serves next the requests whose Host is Allowed and refuses
// others with 421 Misdirected Request, saying that who answers only
// loopback names.
func Handler(next http.Handler, allowed []string, who string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Allowed(r.Host, allowed) {
			http.Error(w, fmt.Sprintf("host %q refused: %s answers only loopback names (localhost, 127.0.0.1, [::1])", r.Host, who),
				http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}
