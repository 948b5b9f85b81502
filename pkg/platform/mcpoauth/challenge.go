package mcpoauth

import (
	"fmt"
	"strings"
)

// Challenge is what a Bearer challenge in a 401's WWW-Authenticate header
// says (RFC 6750 §3, RFC 9728 §5.1).
type Challenge struct {
	// ResourceMetadata is the URL of the protected-resource metadata, if
	// the server named one.
	ResourceMetadata string
	// Scope is the space-separated scope the server asks for, if any.
	Scope string
	// Error is the error code, if any ("invalid_token").
	Error string
}

// ParseChallenge reads the Bearer challenge of a WWW-Authenticate header
// value, which may hold several challenges ("Basic realm=x, Bearer
// resource_metadata=…"). ok is false when there is no Bearer challenge; an
// error means the header is malformed.
func ParseChallenge(header string) (c Challenge, ok bool, err error) {
	p := challengeParser{s: header}
	inBearer, afterScheme := false, false
	for {
		if p.skip(" \t,") {
			afterScheme = false
		}
		if p.done() {
			return c, ok, nil
		}
		name := p.token()
		if name == "" {
			return Challenge{}, false, fmt.Errorf("www-authenticate: unexpected %q at offset %d", p.s[p.i], p.i)
		}
		p.skip(" \t")
		isParam := !p.done() && p.s[p.i] == '=' && !p.token68Tail()
		switch {
		case isParam:
			p.i++
			p.skip(" \t")
			v, err := p.value()
			if err != nil {
				return Challenge{}, false, err
			}
			if inBearer {
				switch strings.ToLower(name) {
				case "resource_metadata":
					c.ResourceMetadata = v
				case "scope":
					c.Scope = v
				case "error":
					c.Error = v
				}
			}
			afterScheme = false
		case afterScheme:
			// A token68 credential right after its scheme; Bearer
			// challenges carry none, so it is skipped.
			p.skip("=")
			afterScheme = false
		default:
			inBearer = strings.EqualFold(name, "bearer")
			ok = ok || inBearer
			afterScheme = true
		}
	}
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) done() bool { return p.i >= len(p.s) }

// skip moves past the bytes in set and reports whether it passed a comma.
func (p *challengeParser) skip(set string) (comma bool) {
	for !p.done() && strings.IndexByte(set, p.s[p.i]) >= 0 {
		comma = comma || p.s[p.i] == ','
		p.i++
	}
	return comma
}

// token reads an RFC 9110 token (also the token68 alphabet but '=').
func (p *challengeParser) token() string {
	start := p.i
	for !p.done() && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

// token68Tail reports whether the '=' at the cursor is the padding of a
// token68 ("abc==" then a comma or the end) rather than a parameter's '='.
func (p *challengeParser) token68Tail() bool {
	j := p.i
	for j < len(p.s) && p.s[j] == '=' {
		j++
	}
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	return j == len(p.s) || p.s[j] == ','
}

// value reads a parameter value: a quoted-string with backslash escapes or
// a bare value.
func (p *challengeParser) value() (string, error) {
	if p.done() || p.s[p.i] != '"' {
		// RFC 9110 wants a token here; servers also send bare URLs, so
		// anything up to a comma or a space is taken.
		start := p.i
		for !p.done() && p.s[p.i] != ',' && p.s[p.i] != ' ' && p.s[p.i] != '\t' && p.s[p.i] != '"' {
			p.i++
		}
		return p.s[start:p.i], nil
	}
	var b strings.Builder
	for p.i++; !p.done(); p.i++ {
		switch ch := p.s[p.i]; ch {
		case '"':
			p.i++
			return b.String(), nil
		case '\\':
			if p.i+1 < len(p.s) {
				p.i++
				b.WriteByte(p.s[p.i])
			}
		default:
			b.WriteByte(ch)
		}
	}
	return "", fmt.Errorf("www-authenticate: unterminated quoted string")
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~/", c) >= 0
}
