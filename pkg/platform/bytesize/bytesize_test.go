package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "2GiB": 2 << 30, "512 MiB": 512 << 20, "8KiB": 8 << 10} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "2GB", "lots", "9999999999GiB"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) took it", in)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 50 << 30: "50.0 GiB", 3 << 20: "3.0 MiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
