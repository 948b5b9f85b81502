package enginetest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TranscriptLines calls each with every line of the package's recorded
// transcripts (testdata/*.jsonl), in file order: the seed corpus of the
// adapters' fuzz targets. A line may be up to 16 MiB; each gets its own copy.
func TranscriptLines(tb testing.TB, each func(line []byte)) {
	tb.Helper()
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	for _, file := range files {
		for _, line := range readLines(tb, file) {
			each(line)
		}
	}
}

// readLines is a transcript's lines, each up to 16 MiB and its own copy.
func readLines(tb testing.TB, file string) [][]byte {
	tb.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return lines
}
