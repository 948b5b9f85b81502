package source

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// ErrURL is wrapped by ValidateURL's refusals.
var ErrURL = errors.New("repository URL refused")

// Option relaxes the git policy; production code passes none.
type Option func(*options)

type options struct {
	allowLocal bool
	caFile     string
}

// AllowLocal admits file:// URLs and absolute local paths, for tests and
// development. A tenant's URL must never be validated with it.
func AllowLocal() Option { return func(o *options) { o.allowLocal = true } }

// CAFile makes git trust the PEM certificates in path for https, for a
// server with a private certificate authority.
func CAFile(path string) Option { return func(o *options) { o.caFile = path } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// transportPrefix matches git's "<transport>::<address>" form, which runs
// helpers such as ext:: (an arbitrary command) and fd::.
var transportPrefix = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*::`)

// ValidateURL accepts an https URL without embedded credentials, and,
// with AllowLocal, a file:// URL or an absolute local path. It refuses
// every other scheme (ssh, git, http and the scp form included), git's
// transport helpers (ext::, fd::), anything git could read as an option
// and control characters. Its errors wrap ErrURL and do not repeat the
// URL's userinfo.
func ValidateURL(raw string, opts ...Option) error {
	o := collect(opts)
	switch {
	case raw == "":
		return fmt.Errorf("%w: empty", ErrURL)
	case strings.HasPrefix(raw, "-"):
		return fmt.Errorf("%w: starts with '-'", ErrURL)
	case strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }):
		return fmt.Errorf("%w: contains control characters or spaces", ErrURL)
	case transportPrefix.MatchString(raw):
		return fmt.Errorf("%w: transport helpers (%s) are not allowed", ErrURL, raw[:strings.Index(raw, "::")+2])
	}
	if strings.HasPrefix(raw, "/") {
		if !o.allowLocal {
			return fmt.Errorf("%w: local paths are not allowed", ErrURL)
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("%w: not a URL (only https is supported)", ErrURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in the URL; pass a Credential", ErrURL)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" || strings.HasPrefix(u.Host, "-") {
			return fmt.Errorf("%w: bad host", ErrURL)
		}
		return nil
	case "file":
		if !o.allowLocal {
			return fmt.Errorf("%w: file URLs are not allowed", ErrURL)
		}
		if u.Host != "" && u.Host != "localhost" {
			return fmt.Errorf("%w: file URL names a host", ErrURL)
		}
		return nil
	}
	return fmt.Errorf("%w: scheme %q is not allowed (only https)", ErrURL, u.Scheme)
}

// validBranch refuses branch names git could read as an option or would
// reject, so the error says so before git runs.
func validBranch(b string) error {
	switch {
	case b == "", strings.HasPrefix(b, "-"), strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"),
		strings.HasSuffix(b, ".lock"), strings.HasSuffix(b, "."), strings.Contains(b, ".."),
		strings.Contains(b, "@{"), strings.Contains(b, "//"),
		strings.ContainsAny(b, " ~^:?*[\\\x7f"),
		strings.ContainsFunc(b, func(r rune) bool { return r < 0x20 }):
		return fmt.Errorf("invalid branch name %q", b)
	}
	return nil
}
