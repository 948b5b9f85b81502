// Package bytesize reads and writes the sizes of configuration and
// messages: a number of bytes, or one with a KiB, MiB or GiB suffix.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var units = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}

// Parse reads a size such as 4096, 512MiB or 2 GiB.
func Parse(v string) (int64, error) {
	v = strings.TrimSpace(v)
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a size such as 2GiB")
	}
	return n * mult, nil
}

// Format writes n for people: in the largest unit it reaches, with one
// decimal (1.5 GiB), or in bytes below 1 KiB.
func Format(n int64) string {
	for _, u := range units {
		if n >= u.mult {
			return strconv.FormatFloat(float64(n)/float64(u.mult), 'f', 1, 64) + " " + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}
