package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/url"
)

// CheckEndpoint refuses a receiver URL that is not absolute https, or http to a loopback address
// (a receiver on the developer's machine): the specification's "Enforcing HTTPS", since the
// signature protects the body from change, not from being read. Its errors show the URL's scheme
// and host only (its path or query may carry the receiver's token).
func CheckEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return errors.New("webhook: the endpoint must be an absolute URL, https://host/path")
	}
	if u.User != nil {
		return fmt.Errorf("webhook: the endpoint %s://%s carries credentials in its URL; the signature authenticates deliveries", u.Scheme, u.Host)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
		return fmt.Errorf("webhook: the endpoint http://%s is not https; plain http is for a receiver on this machine only", u.Host)
	default:
		return fmt.Errorf("webhook: the endpoint's scheme %q is not https", u.Scheme)
	}
}
