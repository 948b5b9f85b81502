package source

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Format names an archive encoding Extract understands.
type Format string

// The formats Extract reads.
const (
	FormatTar   Format = "tar"
	FormatTarGz Format = "tar.gz"
	FormatZip   Format = "zip"
)

// ErrUnknownFormat is returned by DetectFormat for input that is none of
// the supported formats.
var ErrUnknownFormat = errors.New("unknown archive format")

// DetectFormat tells the format from the first bytes of an archive (at
// least 262 for tar, which carries its magic at offset 257). The name is
// only a hint: it admits an old-style tar without magic and makes the
// error for a known but unsupported format say which one it is.
func DetectFormat(head []byte, name string) (Format, error) {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return FormatTarGz, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return FormatZip, nil
	case len(head) >= 262 && bytes.Equal(head[257:262], []byte("ustar")):
		return FormatTar, nil
	case strings.HasSuffix(strings.ToLower(name), ".tar") && len(head) >= 512:
		return FormatTar, nil
	}
	for _, u := range []struct {
		magic, name string
	}{
		{"BZh", "bzip2"},
		{"\xfd7zXZ\x00", "xz"},
		{"\x28\xb5\x2f\xfd", "zstd"},
		{"7z\xbc\xaf\x27\x1c", "7z"},
		{"Rar!", "rar"},
	} {
		if bytes.HasPrefix(head, []byte(u.magic)) {
			return "", fmt.Errorf("%w: %s %q is not supported (use tar, tar.gz or zip)", ErrUnknownFormat, u.name, name)
		}
	}
	return "", fmt.Errorf("%w: %q is not a tar, tar.gz or zip archive", ErrUnknownFormat, name)
}

// Limits bound what one archive may unpack to. A zero field takes its
// default.
type Limits struct {
	// MaxBytes bounds the total size of the files written; default 1 GiB.
	MaxBytes int64
	// MaxFiles bounds the number of entries; default 100 000.
	MaxFiles int
	// MaxFileBytes bounds a single file; default 512 MiB.
	MaxFileBytes int64
	// MaxRatio bounds uncompressed bytes per compressed byte read, the
	// guard against decompression bombs; default 200. It applies once
	// more than a mebibyte has been unpacked, so that a small, very
	// compressible file passes.
	MaxRatio float64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 1 << 30
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = 100_000
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 512 << 20
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = 200
	}
	return l
}

// ratioFloor is how much may be unpacked before MaxRatio applies.
const ratioFloor = 1 << 20

// Stats counts what Extract wrote.
type Stats struct {
	Files, Dirs, Symlinks, Links int
	Bytes                        int64
}

// Reason says why an entry was refused; callers match on it.
type Reason string

// The reasons an entry is refused.
const (
	ReasonNUL          Reason = "name contains a NUL byte"
	ReasonAbsolute     Reason = "absolute path"
	ReasonDotDot       Reason = "path has a .. component"
	ReasonViaSymlink   Reason = "path passes through a symlink"
	ReasonNotDir       Reason = "parent is not a directory"
	ReasonDuplicate    Reason = "duplicate entry"
	ReasonLinkOutside  Reason = "link points outside the archive"
	ReasonLinkTarget   Reason = "hard link target is not a regular file in the archive"
	ReasonSpecial      Reason = "device, fifo or socket"
	ReasonUnsupported  Reason = "unsupported entry type"
	ReasonTooManyFiles Reason = "too many entries"
	ReasonFileTooLarge Reason = "file exceeds the size limit"
	ReasonTooLarge     Reason = "archive exceeds the total size limit"
	ReasonBomb         Reason = "compression ratio exceeds the limit"
	ReasonCorrupt      Reason = "corrupt archive"
	ReasonWrite        Reason = "cannot write"
)

// ArchiveError is the error Extract returns for an archive it refuses or
// cannot read: the entry it was at (empty before the first) and why.
type ArchiveError struct {
	Entry  string
	Reason Reason
	Err    error // the underlying cause, if any
}

func (e *ArchiveError) Error() string {
	s := fmt.Sprintf("archive entry %q: %s", e.Entry, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ArchiveError) Unwrap() error { return e.Err }

func refuse(entry string, r Reason) error { return &ArchiveError{Entry: entry, Reason: r} }
