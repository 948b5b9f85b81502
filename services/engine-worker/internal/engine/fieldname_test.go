package engine

import "testing"

func TestCamelCase(t *testing.T) {
	tests := []struct{ give, want string }{
		{"file_path", "filePath"},
		{"filePath", "filePath"},
		{"old_str", "oldStr"},
		{"a__b_", "aB"},
		{"_private", "Private"},
		{"ünit_één", "ünitÉén"},
		{"-A", "-A"},
	}
	for _, tt := range tests {
		if got := CamelCase(tt.give); got != tt.want {
			t.Errorf("CamelCase(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
