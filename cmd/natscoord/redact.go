package main

import "strings"

// A server URL may carry credentials: nats://user:password@host or
// nats://token@host. They must never reach the terminal, so every place
// that prints a server URL, or wraps one in an error, prints it through
// redactURLs, and every error line natscoord prints goes through
// connFlags.redact (errors of nats.go and net/url may quote the URL).

// redactedUserInfo replaces the user information of a URL.
const redactedUserInfo = "***"

// redactURLs returns the comma-separated URL list s with the user
// information of every URL (user and password, or a token) replaced by
// ***. A URL without a scheme (host:port, user:pw@host:port) is handled
// too, as nats.go accepts it.
func redactURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if start, end, ok := userInfoSpan(p); ok {
			parts[i] = p[:start] + redactedUserInfo + p[end:]
		}
	}
	return strings.Join(parts, ",")
}

// userInfoSpan returns where the user information of the URL u starts
// and ends (at its last '@'), if it has any. A server URL has no path,
// and a password may hold an unescaped '/' or '@', so everything up to
// the last '@' is taken as user information: too much is hidden rather
// than too little.
func userInfoSpan(u string) (start, end int, ok bool) {
	if i := strings.Index(u, "://"); i >= 0 {
		start = i + len("://")
	}
	at := strings.LastIndex(u[start:], "@")
	if at < 0 {
		return 0, 0, false
	}
	return start, start + at, true
}

// redact returns s with the user information of every server URL c
// connects to (the --server flag or NATS_URL) replaced by ***, the way
// redactURLs prints the URLs themselves. It is applied to every error
// line natscoord prints, since a library error may quote a URL.
func (c *connFlags) redact(s string) string {
	for _, u := range strings.Split(c.url(), ",") {
		start, end, ok := userInfoSpan(u)
		if !ok || end == start {
			continue
		}
		s = strings.ReplaceAll(s, u[start:end]+"@", redactedUserInfo+"@")
	}
	return s
}

// redactAll is redact, then redactURLs: the configured credentials
// wherever they appear, and the user information of any URL.
func (c *connFlags) redactAll(s string) string { return redactURLs(c.redact(s)) }
