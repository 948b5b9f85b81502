package egress

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// names is a resolver of fixed answers.
type names map[string][]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := n[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func TestCheckURL(t *testing.T) {
	p := Policy{Allow: ParseAllow(" models.internal , [::1]"), Resolver: names{
		"api.example.com": {"93.184.215.14"},
		"rebind.example":  {"93.184.215.14", "10.0.0.7"},
		"models.internal": {"10.1.2.3"},
		"meta.example":    {"169.254.169.254"},
		"v6.example":      {"2606:4700::6810:84e5"},
	}}
	for _, c := range []struct {
		url  string
		want string // "" passes; else a piece of the error
	}{
		{"", ""},
		{"https://api.example.com/v1", ""},
		{"https://v6.example", ""},
		{"https://93.184.215.14/v1", ""},
		{"http://models.internal:8080/v1", ""}, // allowed host: http and private
		{"http://[::1]:9000", ""},
		{"http://api.example.com/v1", "plain http"},
		{"ftp://api.example.com", "want an https URL"},
		{"api.example.com/v1", "want an https URL"},
		{"https://", "no host"},
		{"https://user:secret@api.example.com", "credentials"},
		{"https://127.0.0.1:8421/metrics", "loopback"},
		{"https://localhost/v1", "loopback"},
		{"https://[::ffff:127.0.0.1]/", "loopback"},
		{"https://10.0.0.1/", "private"},
		{"https://192.168.1.10/", "private"},
		{"https://100.100.100.100/", "private"},
		{"https://[fd00::1]/", "private"},
		{"https://169.254.169.254/latest/meta-data", "link-local"},
		{"https://meta.example/", "link-local"},
		{"https://rebind.example/", "private"}, // any address that is not public refuses
		{"https://0.0.0.0/", "unspecified"},
		{"https://224.0.0.1/", "multicast"},
		{"https://nowhere.example/", ""}, // not resolvable from here: not refused
		{"https://%zz", "apiUrl"},
	} {
		err := p.CheckURL(context.Background(), c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want it allowed", c.url, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckURL(%q) = %v, want an error about %q", c.url, err, c.want)
		}
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://api.example.com/v1", "http://[::1]:9", "https://user@h", "https://10.0.0.1", "%"} {
		f.Add(s)
	}
	p := Policy{Allow: []string{"::1"}, Resolver: names{"api.example.com": {"93.184.215.14"}}}
	f.Fuzz(func(t *testing.T, raw string) {
		_ = p.CheckURL(context.Background(), raw) // never panics; an error is an answer
	})
}
