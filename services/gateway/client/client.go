// Package client is the Go client of the Clopen gateway: typed methods for
// every REST route and a WebSocket connection for live chat events. Errors
// the gateway returns come back as *events.APIError, with the HTTP status,
// the stable code and the message.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// Client calls one gateway with one API key. It is safe for concurrent use.
type Client struct {
	base string
	key  string
	// HTTP is the client requests go through; http.DefaultClient unless set.
	HTTP *http.Client
}

// New returns a client of the gateway at baseURL (http://host:port)
// authenticating with apiKey.
func New(baseURL, apiKey string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), key: apiKey, HTTP: http.DefaultClient}
}

// do sends one request: in (nil for none) as the JSON body, the reply's body
// decoded into out (nil to ignore it).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	contentType := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	}
	return c.doBody(ctx, method, u, path, body, contentType, out)
}

// doBody sends body (nil for none) as contentType to u and decodes the
// reply into out, or the error body into an *events.APIError.
func (c *Client) doBody(ctx context.Context, method, u, path string, body io.Reader, contentType string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read reply: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e api.Error
		if json.Unmarshal(data, &e) != nil || e.Error.Code == "" {
			e.Error = api.ErrorDetail{Code: "http_" + strconv.Itoa(resp.StatusCode), Message: strings.TrimSpace(string(data))}
		}
		retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &events.APIError{Status: resp.StatusCode, Code: e.Error.Code, Message: e.Error.Message, ClientRequestID: e.Error.ClientRequestID,
			RetryAfter: retry, Budget: e.Error.Budget}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode reply: %w", method, path, err)
	}
	return nil
}

func get[T any](ctx context.Context, c *Client, path string, query url.Values) (T, error) {
	var out T
	err := c.do(ctx, http.MethodGet, path, query, nil, &out)
	return out, err
}

func send[T any](ctx context.Context, c *Client, method, path string, in any) (T, error) {
	var out T
	err := c.do(ctx, method, path, nil, in, &out)
	return out, err
}

// p builds a path from literal parts and escaped ids: p("/v1/projects/", id).
func p(parts ...string) string {
	var b strings.Builder
	for i, s := range parts {
		if i%2 == 1 {
			s = url.PathEscape(s)
		}
		b.WriteString(s)
	}
	return b.String()
}

func pageQuery(kv ...string) url.Values {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" && kv[i+1] != "0" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}
