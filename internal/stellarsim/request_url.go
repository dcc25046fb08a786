package stellarsim

import "net/http"

// requestBase is the scheme and host a client reached this network at, e.g.
// "http://127.0.0.1:8010", as Horizon derives it for its links (stellar/go at 096f654e, before
// Horizon moved out of that repository: services/horizon/internal/context/context.go, BaseURL:
// X-Forwarded-Proto, else https for TLS, else http; and the request's Host). Horizon's links, its
// root's friendbot template and getNetwork's friendbotUrl use it, so they name the address the
// client used even when the network is mounted behind another listener (as the devstack does)
// rather than the port Start listens on. Unlike Horizon it takes X-Forwarded-Proto only when it
// says http or https. Without a Host (a request built in process) it is the listener's URL.
func (n *Network) requestBase(r *http.Request) string {
	if r == nil || r.Host == "" {
		return n.baseURL
	}
	scheme := "http"
	switch {
	case r.Header.Get("X-Forwarded-Proto") == "https", r.Header.Get("X-Forwarded-Proto") == "http":
		scheme = r.Header.Get("X-Forwarded-Proto")
	case r.TLS != nil:
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
