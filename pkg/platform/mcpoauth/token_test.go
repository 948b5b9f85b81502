package mcpoauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestTokenRedacts(t *testing.T) {
	tok := Token{AccessToken: "at-SECRET", RefreshToken: "rt-SECRET", TokenType: "Bearer", Expiry: time.Unix(1e9, 0), Scopes: []string{"mcp:tools"}}
	g := Grant{Tenant: "t", Slug: "s", Server: Server{ClientID: "c", ClientSecret: "cs-SECRET"}, Token: tok}
	p := Pending{Nonce: "n", Verifier: "v-SECRET", Server: g.Server}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "token", tok, "grant", g, "pending", p, "secret", tok.AccessToken)
	outputs := []string{
		fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s %q", tok, tok, tok, tok, tok),
		fmt.Sprintf("%v %+v %#v", g, g, g), fmt.Sprintf("%v %+v %#v", p, p, p),
		fmt.Sprintf("%v %s %q %x", tok.AccessToken, tok.AccessToken, tok.AccessToken, tok.AccessToken),
		logged.String(),
	}
	for _, out := range outputs {
		if strings.Contains(out, "SECRET") {
			t.Errorf("printed a secret: %s", out)
		}
	}
	if !strings.Contains(fmt.Sprint(tok), "[redacted]") {
		t.Errorf("String() = %s, want the access token shown as [redacted]", tok)
	}

	// The JSON the caller seals keeps everything.
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var back Grant
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Token.AccessToken != tok.AccessToken || back.Token.RefreshToken != tok.RefreshToken ||
		!back.Token.Expiry.Equal(tok.Expiry) || back.Server.ClientSecret != "cs-SECRET" {
		t.Errorf("JSON round trip = %#v, lost a field", back)
	}
	if got := tok.Header(); got != "Bearer at-SECRET" {
		t.Errorf("Header() = %q, want Bearer at-SECRET", got)
	}
}
