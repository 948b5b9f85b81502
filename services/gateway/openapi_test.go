package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestOpenAPIIsTrue checks the served document against the route table in
// both directions, checks that every $ref resolves and every route names its
// security, and that the mux really serves every route the table lists.
func TestOpenAPIIsTrue(t *testing.T) {
	e := newEnv(t, nil)
	resp, err := http.Get(e.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas         map[string]json.RawMessage `json:"schemas"`
			SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		} `json:"components"`
	}
	raw := new(strings.Builder)
	if err := json.NewDecoder(teeReader(resp.Body, raw)).Decode(&doc); err != nil {
		t.Fatalf("decode /openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0") || doc.Components.SecuritySchemes["bearer"] == nil {
		t.Errorf("openapi %q, security schemes %v: want 3.0 with bearer", doc.OpenAPI, doc.Components.SecuritySchemes)
	}

	inTable := map[string]bool{}
	for _, rt := range routeTable() {
		key := strings.ToLower(rt.Method) + " " + rt.Path
		inTable[key] = true
		op, ok := doc.Paths[rt.Path][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("route %s %s is missing from the document", rt.Method, rt.Path)
			continue
		}
		var o struct {
			Security  []map[string][]string       `json:"security"`
			Responses map[string]json.RawMessage  `json:"responses"`
			Params    []struct{ Name, In string } `json:"parameters"`
		}
		if err := json.Unmarshal(op, &o); err != nil {
			t.Fatal(err)
		}
		wantSecurity := []map[string][]string{}
		if rt.Auth { // a bearer key, or a browser's session cookie
			wantSecurity = []map[string][]string{{"bearer": {}}, {"session": {}}}
		}
		if !reflect.DeepEqual(o.Security, wantSecurity) {
			t.Errorf("%s %s: security %v, want %v", rt.Method, rt.Path, o.Security, wantSecurity)
		}
		if _, ok := o.Responses[itoa(rt.Status())]; !ok {
			t.Errorf("%s %s: no %d response documented", rt.Method, rt.Path, rt.Status())
		}
		for status := range rt.Errors {
			if _, ok := o.Responses[itoa(status)]; !ok {
				t.Errorf("%s %s: its %d error is not documented", rt.Method, rt.Path, status)
			}
		}
		for _, m := range regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(rt.Path, -1) {
			found := false
			for _, p := range o.Params {
				found = found || (p.Name == m[1] && p.In == "path")
			}
			if !found {
				t.Errorf("%s %s: path parameter %s undocumented", rt.Method, rt.Path, m[1])
			}
		}
		// The mux serves the route: no key gets 401 (or the public answer),
		// never the fallback "no route".
		status, _, body := rawDo(t, rt.Method, e.url+strings.NewReplacer("{id}", "x", "{userId}", "y", "{slug}", "z").Replace(rt.Path), "", nil)
		if strings.Contains(body.Error.Message, "no route") || (rt.Auth && status != http.StatusUnauthorized) {
			t.Errorf("%s %s without a key = %d %+v, want it routed and refused with 401", rt.Method, rt.Path, status, body.Error)
		}
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if !inTable[method+" "+path] {
				t.Errorf("the document names %s %s, which the route table does not have", method, path)
			}
		}
	}
	for _, ref := range regexp.MustCompile(`"\$ref":"#/components/schemas/(\w+)"`).FindAllStringSubmatch(raw.String(), -1) {
		if doc.Components.Schemas[ref[1]] == nil {
			t.Errorf("$ref to undefined schema %s", ref[1])
		}
	}
	// Request and response schemas name their properties.
	for _, name := range []string{"CreateProject", "SendMessage", "Session", "Project", "NewAPIKey", "Snapshot", "Error",
		"SkillInput", "Skill", "PermissionSet", "Profile", "AccountInput", "Account", "AvailableSkill"} {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(doc.Components.Schemas[name], &s); err != nil || len(s.Properties) == 0 {
			t.Errorf("schema %s has no properties: %s", name, doc.Components.Schemas[name])
		}
	}
	// A run's metered usage is documented as nullable, and what null means.
	var run struct {
		Properties map[string]struct {
			AllOf       []map[string]string `json:"allOf"`
			Nullable    bool                `json:"nullable"`
			Description string              `json:"description"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(doc.Components.Schemas["Run"], &run)
	if m := run.Properties["meteredUsage"]; !m.Nullable || len(m.AllOf) != 1 || m.AllOf[0]["$ref"] != "#/components/schemas/TokenUsage" ||
		!strings.Contains(m.Description, "null when the run did not go through the proxy") {
		t.Errorf("Run.meteredUsage is documented as %+v; want a nullable TokenUsage that says when it is null", m)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func teeReader(r io.Reader, w io.Writer) io.Reader { return io.TeeReader(r, w) }
