package httpapi

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"clopen.dev/services/gateway/internal/auth"
)

// pathParam finds the {name} parameters of a route pattern.
var pathParam = regexp.MustCompile(`\{([A-Za-z]+)\}`)

// openAPI builds the OpenAPI 3.0 document of routes: paths and operations
// come from the table, schemas from the handlers' Go types.
func openAPI(routes []Route) map[string]any {
	sc := newSchemas()
	errRef := sc.of(reflectErrorType)
	errResp := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
	}
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		op := map[string]any{
			"summary":     rt.Summary,
			"operationId": operationID(rt),
			"tags":        []string{rt.Tag},
		}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, q := range rt.Query {
			params = append(params, map[string]any{"name": q.Name, "in": "query", "description": q.Description, "schema": map[string]any{"type": q.Type}})
		}
		if rt.Path == wsPath {
			params = append(params, map[string]any{"name": "access_token", "in": "query",
				"description": "the API key, for browsers, which cannot set the Authorization header on a WebSocket",
				"schema":      map[string]any{"type": "string"}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.ep.in != noneType {
			op["requestBody"] = map[string]any{"required": true,
				"content": map[string]any{"application/json": map[string]any{"schema": sc.of(rt.ep.in)}}}
		}
		if len(rt.ep.binary) > 0 {
			content := map[string]any{}
			for _, mt := range rt.ep.binary {
				content[mt] = map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}
			}
			op["requestBody"] = map[string]any{"required": true, "content": content}
		}
		ok := map[string]any{"description": http.StatusText(rt.ep.status)}
		switch {
		case rt.ep.media != "":
			ok["content"] = map[string]any{rt.ep.media: map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
		case rt.ep.out != noneType:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": sc.of(rt.ep.out)}}
		}
		responses := map[string]any{strconv.Itoa(rt.ep.status): ok, "default": errResp("an error")}
		if rt.Auth {
			responses["401"] = errResp("missing, invalid, expired or revoked API key")
			responses["429"] = errResp("the key's rate limit is exhausted; see Retry-After")
			op["security"] = []any{map[string]any{"bearer": []string{}}, map[string]any{"session": []string{}}}
		} else {
			op["security"] = []any{}
		}
		for status, desc := range rt.Errors { // a route's own description of a status comes last
			responses[strconv.Itoa(status)] = errResp(desc)
		}
		op["responses"] = responses
		if paths[rt.Path] == nil {
			paths[rt.Path] = map[string]any{}
		}
		paths[rt.Path][strings.ToLower(rt.Method)] = op
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":   "Clopen gateway",
			"version": "1.0.0",
			"description": "Chat with AI coding agents. Authenticate every /v1 route with `Authorization: Bearer clp_...` " +
				"(or, in a browser, the session cookie POST /v1/session sets; a request it authenticates must come from the gateway's own origin); " +
				"resources of other tenants, and projects the caller is not a member of, answer 404. " +
				"Live events flow over the WebSocket at /v1/ws.",
		},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []string{}}, map[string]any{"session": []string{}}},
		"components": map[string]any{
			"schemas": sc.defs,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "clp_<43 base64url characters>"},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": auth.SessionCookie,
					"description": "a web session's key, set HttpOnly by POST /v1/session or /v1/session/dev"},
			},
		},
	}
}

// operationID names an operation after its method and path:
// GET /v1/projects/{id}/members is getProjectsIdMembers.
func operationID(rt Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.Method))
	for _, part := range strings.Split(rt.Path, "/") {
		part = strings.Trim(part, "{}")
		if part == "" || part == "v1" {
			continue
		}
		for _, w := range strings.FieldsFunc(part, func(r rune) bool { return r == '-' || r == '.' }) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}
