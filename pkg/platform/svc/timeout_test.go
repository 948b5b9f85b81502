package svc

import (
	"testing"
	"time"
)

func TestCallerTimeout(t *testing.T) {
	tests := []struct {
		give    string
		want    time.Duration
		wantOK  bool
		wantErr bool
	}{
		{"", 0, false, false},
		{"0", 0, true, false},
		{"1500", 1500 * time.Millisecond, true, false},
		{"86400000", 24 * time.Hour, true, false},
		{"86400001", 0, false, true},
		{"-5", 0, false, true},
		{"1.5", 0, false, true},
		{"9223372036854775808", 0, false, true},
	}
	for _, tt := range tests {
		got, ok, err := callerTimeout(tt.give)
		if got != tt.want || ok != tt.wantOK || (err != nil) != tt.wantErr {
			t.Errorf("callerTimeout(%q) = %v, %v, %v; want %v, %v, error %v", tt.give, got, ok, err, tt.want, tt.wantOK, tt.wantErr)
		}
	}
}

// FuzzCallerTimeout: any header value is a duration within bounds or an
// error, never a panic or a negative duration.
func FuzzCallerTimeout(f *testing.F) {
	for _, s := range []string{"", "0", "10000", "-1", "abc", "86400001", "+7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok, err := callerTimeout(v)
		if err != nil && ok || d < 0 || d > maxTimeout || (!ok && d != 0) {
			t.Fatalf("callerTimeout(%q) = %v, %v, %v", v, d, ok, err)
		}
	})
}
