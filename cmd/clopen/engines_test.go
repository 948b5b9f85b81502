package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestEnginesCommand(t *testing.T) {
	data := t.TempDir()
	env := map[string]string{"CLOPEN_DATA": data, "CLOPEN_ENGINES_DIR": data + "/engines"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		args    []string
		want    string // in stdout
		wantErr string
	}{
		{args: []string{"engines"}, wantErr: "usage: clopen engines install"},
		{args: []string{"engines", "install"}, wantErr: "usage"},
		{args: []string{"engines", "install", "vim"}, wantErr: `unknown engine "vim"; engines: claude-code`},
		{args: []string{"engines", "frobnicate"}, wantErr: "usage"},
		{args: []string{"engines", "doctor"}, want: "scripted     ready          built-in   -         built in and always offered: models scripted/<scenario>"},
		{args: []string{"engines", "doctor"}, want: "claude-code  not-installed  -          2.1.332   claude-code is not installed in " + data + "/engines: run `clopen engines install claude-code`"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tt.args, getenv, &stdout, &stderr)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("clopen %v = %v, want an error containing %q", tt.args, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || !strings.Contains(stdout.String(), tt.want)):
			t.Errorf("clopen %v = %v, output:\n%s\nwant it to contain %q", tt.args, err, stdout.String(), tt.want)
		}
	}
}
