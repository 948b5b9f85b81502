package main

import "testing"

func TestChatURL(t *testing.T) {
	tests := []struct {
		give map[string]string
		want string
	}{
		{give: map[string]string{}, want: "http://127.0.0.1:8420"},
		{give: map[string]string{"CLOPEN_HTTP_ADDR": "127.0.0.1:9000"}, want: "http://127.0.0.1:9000"},
		{give: map[string]string{"CLOPEN_HTTP_ADDR": ":9000"}, want: "http://127.0.0.1:9000"},
		{give: map[string]string{"CLOPEN_HTTP_ADDR": "0.0.0.0:9000"}, want: "http://127.0.0.1:9000"},
		{give: map[string]string{"CLOPEN_HTTP_ADDR": "[::]:9000"}, want: "http://127.0.0.1:9000"},
		{give: map[string]string{"CLOPEN_HTTP_ADDR": "localhost:9000"}, want: "http://localhost:9000"},
		{give: map[string]string{"CLOPEN_URL": "https://clopen.example/", "CLOPEN_HTTP_ADDR": "127.0.0.1:9000"}, want: "https://clopen.example"},
	}
	for _, tt := range tests {
		if got := chatURL(func(k string) string { return tt.give[k] }); got != tt.want {
			t.Errorf("chatURL(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
