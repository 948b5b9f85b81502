package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

// browserDo sends a request as a browser on page origin would (Origin and
// Sec-Fetch-Site, the headers a browser sets and a page cannot), with the
// session cookie when cookie is set. origin "" sends neither header, as a
// non-browser client does.
func browserDo(t *testing.T, method, url, cookie, origin string, body any) (*http.Response, []byte) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "clopen_session", Value: cookie})
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
		site := "cross-site"
		if origin == url[:len(origin)] {
			site = "same-origin"
		}
		req.Header.Set("Sec-Fetch-Site", site)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp, out.Bytes()
}

// sessionCookieOf returns the session cookie resp sets.
func sessionCookieOf(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == "clopen_session" {
			return c
		}
	}
	return nil
}

// TestWebSession: signing in with an API key sets an HttpOnly, SameSite
// cookie holding a new, expiring key of the same user (never the key
// given), which authenticates REST and the WebSocket from the app's origin;
// signing out revokes it.
func TestWebSession(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	self := e.url

	resp, body := browserDo(t, "POST", e.url+"/v1/session", "", self, api.SignIn{APIKey: a.admin.key})
	c := sessionCookieOf(resp)
	var me api.Me
	if resp.StatusCode != http.StatusCreated || c == nil || json.Unmarshal(body, &me) != nil || me.User.ID != a.admin.user.ID {
		t.Fatalf("sign in = %d %s, cookie %v; want 201, the admin, a cookie", resp.StatusCode, body, c)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Value == a.admin.key || !strings.HasPrefix(c.Value, "clp_") {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, path /, a key of its own", c)
	}
	keys, err := a.admin.c.APIKeys(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var session *api.APIKey
	for i, k := range keys {
		if k.Name == "web session" && strings.HasPrefix(c.Value, k.Prefix) {
			session = &keys[i]
		}
	}
	if session == nil || session.ExpiresAt == nil || time.Until(*session.ExpiresAt) > 13*time.Hour || time.Until(*session.ExpiresAt) < 11*time.Hour {
		t.Fatalf("keys %+v: want the session's key, expiring in 12 h", keys)
	}

	var sess api.WebSession
	if _, body := browserDo(t, "GET", e.url+"/v1/session", c.Value, self, nil); json.Unmarshal(body, &sess) != nil || !sess.SignedIn {
		t.Errorf("GET /v1/session with the cookie = %s, want signedIn", body)
	}
	// The cookie authenticates REST.
	if resp, body := browserDo(t, "GET", e.url+"/v1/me", c.Value, self, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), a.admin.user.ID) {
		t.Errorf("GET /v1/me with the cookie = %d %s", resp.StatusCode, body)
	}
	// And the WebSocket, from the app's origin, with no key in the URL.
	ws := strings.Replace(e.url, "http", "ws", 1) + "/v1/ws"
	hdr := http.Header{"Cookie": {"clopen_session=" + c.Value}}
	conn, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: hdr.Clone()})
	if err != nil {
		t.Fatalf("dial with the cookie: %v", err)
	}
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"id":"p","op":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	var f events.ServerFrame
	if _, data, err := conn.Read(ctx); err != nil || json.Unmarshal(data, &f) != nil || f.ID != "p" || f.OK == nil || !*f.OK {
		t.Errorf("ping over a cookie socket = %+v, %v", f, err)
	}
	conn.CloseNow()
	hdr.Set("Origin", "http://evil.example")
	if _, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: hdr}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a socket opened with the cookie from another site: %v; want 403", err)
	}

	// Signing out revokes the session's key and clears the cookie.
	resp, _ = browserDo(t, "DELETE", e.url+"/v1/session", c.Value, self, nil)
	if cleared := sessionCookieOf(resp); resp.StatusCode != http.StatusNoContent || cleared == nil || cleared.MaxAge >= 0 {
		t.Errorf("sign out = %d, cookie %+v; want 204 and the cookie deleted", resp.StatusCode, cleared)
	}
	if resp, _ := browserDo(t, "GET", e.url+"/v1/me", c.Value, self, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the signed-out cookie = %d, want 401", resp.StatusCode)
	}
	if _, body := browserDo(t, "GET", e.url+"/v1/session", c.Value, self, nil); json.Unmarshal(body, &sess) != nil || sess.SignedIn {
		t.Errorf("GET /v1/session with the signed-out cookie = %s, want not signedIn", body)
	}
	if _, err := a.admin.c.Me(ctx); err != nil {
		t.Errorf("the key signed in with stopped working: %v", err)
	}

	// Bad keys set no cookie.
	for _, key := range []string{"", "clp_nope", a.admin.key + "x"} {
		resp, _ := browserDo(t, "POST", e.url+"/v1/session", "", self, api.SignIn{APIKey: key})
		if resp.StatusCode/100 != 4 || sessionCookieOf(resp) != nil {
			t.Errorf("sign in with %q = %d, cookie %v; want refused without a cookie", key, resp.StatusCode, sessionCookieOf(resp))
		}
	}
}

// TestWebSessionRefusesOtherSites: the browser sends the session cookie
// along with any request to the gateway, a page of another site's included
// (a form post, a fetch). Without the origin check such a request acts as
// the user: the same request whose browser headers the check cannot see
// (a client that sends none) succeeds with the cookie. With them, a
// cross-site or other-origin request is refused and changes nothing; the
// app's own origin and bearer keys are unaffected.
func TestWebSessionRefusesOtherSites(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	resp, _ := browserDo(t, "POST", e.url+"/v1/session", "", e.url, api.SignIn{APIKey: a.admin.key})
	c := sessionCookieOf(resp)
	if c == nil {
		t.Fatalf("sign in = %d, no cookie", resp.StatusCode)
	}
	create := func(origin, name string) int {
		resp, _ := browserDo(t, "POST", e.url+"/v1/projects", c.Value, origin, api.CreateProject{Name: name})
		return resp.StatusCode
	}
	// What the attack would do were its origin invisible: act as the user.
	if status := create("", "unseen-origin"); status != http.StatusCreated {
		t.Fatalf("a cookie request without browser headers = %d, want 201 (the cookie authenticates)", status)
	}
	if status := create("http://evil.example", "from-evil"); status != http.StatusForbidden {
		t.Errorf("a cross-site post with the cookie = %d, want 403", status)
	}
	req, _ := http.NewRequest("POST", e.url+"/v1/projects", strings.NewReader(`{"name":"old-browser"}`))
	req.AddCookie(c)
	req.Header.Set("Origin", "http://127.0.0.1:1") // another port of this host: same site, another origin
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a post from another origin of the same site = %d, want 403", resp.StatusCode)
	}
	if status := create(e.url, "from-the-app"); status != http.StatusCreated {
		t.Errorf("a post from the app's origin = %d, want 201", status)
	}
	if resp, _ = browserDo(t, "POST", e.url+"/v1/session", "", "http://evil.example", api.SignIn{APIKey: a.admin.key}); resp.StatusCode != http.StatusForbidden || sessionCookieOf(resp) != nil {
		t.Errorf("a cross-site sign-in = %d, want 403 without a cookie", resp.StatusCode)
	}
	ps, err := a.admin.c.Projects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == "from-evil" || p.Name == "old-browser" {
			t.Errorf("project %q was created by another site", p.Name)
		}
	}
	// A bearer key is not a browser's ambient credential: no origin check.
	if _, err := a.admin.c.CreateProject(ctx, api.CreateProject{Name: "with-a-key"}); err != nil {
		t.Errorf("create with a bearer key: %v", err)
	}
}

// TestDevSignIn: under clopen dev the app on this machine signs in as the
// development user without asking; a gateway not run by clopen dev offers
// no such thing, and a page that reaches the gateway under another host
// name (DNS rebinding) is refused.
func TestDevSignIn(t *testing.T) {
	plain := newEnv(t, nil)
	var sess api.WebSession
	if resp, body := browserDo(t, "GET", plain.url+"/v1/session", "", "", nil); resp.StatusCode != http.StatusOK ||
		json.Unmarshal(body, &sess) != nil || sess.DevSignIn {
		t.Errorf("GET /v1/session without clopen dev = %d %s, want devSignIn false", resp.StatusCode, body)
	}
	if resp, _ := browserDo(t, "POST", plain.url+"/v1/session/dev", "", plain.url, nil); resp.StatusCode != http.StatusNotFound || sessionCookieOf(resp) != nil {
		t.Errorf("dev sign-in without clopen dev = %d, want 404 without a cookie", resp.StatusCode)
	}

	keyFile := filepath.Join(t.TempDir(), gateway.DevKeyFile)
	e := newEnv(t, func(c *gateway.Config) { c.DevKeyFile = keyFile })
	a := e.newTenant(t, "dev")
	if err := os.WriteFile(keyFile, []byte(a.admin.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if resp, body := browserDo(t, "GET", e.url+"/v1/session", "", "", nil); json.Unmarshal(body, &sess) != nil || !sess.DevSignIn {
		t.Errorf("GET /v1/session under clopen dev = %d %s, want devSignIn", resp.StatusCode, body)
	}
	resp, body := browserDo(t, "POST", e.url+"/v1/session/dev", "", e.url, nil)
	c := sessionCookieOf(resp)
	if resp.StatusCode != http.StatusCreated || c == nil || c.Value == a.admin.key || !strings.Contains(string(body), a.admin.user.ID) {
		t.Fatalf("dev sign-in = %d %s, cookie %v; want the dev user with a session key", resp.StatusCode, body, c)
	}

	rebound := strings.Replace(e.url, "127.0.0.1", "attacker.example", 1)
	req, _ := http.NewRequest("POST", e.url+"/v1/session/dev", nil)
	req.Host = strings.TrimPrefix(rebound, "http://")
	req.Header.Set("Origin", rebound)
	req.Header.Set("Sec-Fetch-Site", "same-origin") // it is, for the rebound name
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || sessionCookieOf(resp) != nil {
		t.Errorf("dev sign-in under the host %s = %d, want 403 without a cookie", req.Host, resp.StatusCode)
	}
}
