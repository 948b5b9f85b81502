package mcpoauth

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Secret is a credential. It marshals to JSON as itself, so a Token or a
// Server round-trips through the caller's sealed storage, but it prints as
// "[redacted]" with every fmt verb that formats strings, with %#v and in
// slog, so a Token logged by mistake leaks nothing.
type Secret string

// String reports whether the secret is set, never its value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts like String.
func (s Secret) GoString() string { return s.String() }

// LogValue redacts like String.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Token is what the authorization server granted for one MCP server. The
// caller seals its JSON at rest; String and LogValue leave the credentials
// out.
type Token struct {
	AccessToken  Secret    `json:"access_token"`
	RefreshToken Secret    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"`
}

// String describes the token without its credentials.
func (t Token) String() string {
	refresh := "none"
	if t.RefreshToken != "" {
		refresh = "set"
	}
	exp := "never"
	if !t.Expiry.IsZero() {
		exp = t.Expiry.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("Token{type=%s expiry=%s scopes=%q access=%s refresh=%s}",
		t.TokenType, exp, t.Scopes, t.AccessToken, refresh)
}

// GoString redacts like String.
func (t Token) GoString() string { return t.String() }

// LogValue redacts like String.
func (t Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

// Header is the value of the Authorization header a request to the MCP
// server carries.
func (t Token) Header() string {
	typ := t.TokenType
	if typ == "" || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	return typ + " " + string(t.AccessToken)
}

// tokenFrom keeps what Clopen needs of an oauth2 token. A refresh response
// may omit the refresh token, which then stays the one held before (RFC 6749
// §6).
func tokenFrom(o *oauth2.Token, prev Token) Token {
	t := Token{
		AccessToken:  Secret(o.AccessToken),
		RefreshToken: Secret(o.RefreshToken),
		TokenType:    o.TokenType,
		Expiry:       o.Expiry,
		Scopes:       prev.Scopes,
	}
	if t.RefreshToken == "" {
		t.RefreshToken = prev.RefreshToken
	}
	if s, ok := o.Extra("scope").(string); ok && s != "" {
		t.Scopes = strings.Fields(s)
	}
	return t
}

// classify maps a token endpoint failure to ErrNeedsAuth (the server
// refused the grant or the client: only a person can fix it) or
// ErrUnreachable (the network or the server failed: a later try may work).
func classify(op string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		desc := re.ErrorCode
		if re.ErrorDescription != "" {
			desc += ": " + re.ErrorDescription
		}
		if desc == "" && re.Response != nil {
			desc = "status " + strconv.Itoa(re.Response.StatusCode)
		}
		if re.Response != nil && re.Response.StatusCode >= 500 {
			return fmt.Errorf("%s: %w: token endpoint answered %d %s", op, ErrUnreachable, re.Response.StatusCode, desc)
		}
		return fmt.Errorf("%s: %w: %s", op, ErrNeedsAuth, desc)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnreachable, err)
}
