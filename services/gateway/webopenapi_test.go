package gateway_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite web/openapi.json from the served document")

// webOpenAPI is the copy of the OpenAPI document the web app generates its
// typed API client from (npm run gen in web/).
var webOpenAPI = filepath.Join("..", "..", "web", "openapi.json")

// TestWebAppOpenAPIIsCurrent keeps the web app's copy of the document equal
// to what the gateway serves, so its generated client cannot drift from the
// API. After changing a route or a wire type: go test ./services/gateway
// -run TestWebAppOpenAPIIsCurrent -args -update, then npm run gen in web/.
func TestWebAppOpenAPIIsCurrent(t *testing.T) {
	e := newEnv(t, nil)
	resp, err := http.Get(e.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, served, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		if err := os.WriteFile(webOpenAPI, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(webOpenAPI)
	if err != nil {
		t.Fatalf("read the web app's copy: %v", err)
	}
	var want, got any
	if err := json.Unmarshal(served, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(committed, &got); err != nil {
		t.Fatalf("%s: %v", webOpenAPI, err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s differs from the served document: run this test with -update, then npm run gen in web/", webOpenAPI)
	}
}
