// Package snapshot captures directory trees into a shared object store and
// restores them elsewhere, so that a chat's workspace and an engine's native
// session files can follow the chat from one worker to the next.
//
// # Format
//
// A snapshot is one manifest plus the packs it points into. Every object a
// tenant makes or reads is named under "<tenant>/":
//
//	<tenant>/packs/<sha256 of the pack>          file contents, concatenated
//	<tenant>/manifests/<sha256 of the object>    gzip'ed JSON Manifest
//
// A manifest lists, per named tree, every regular file, symlink and empty
// directory, sorted by path. A regular file's Entry carries the sha256 of its
// content and where that content lives: the pack (by its hash) and the
// offset inside it. Packs and manifests are content-addressed and never
// rewritten, so a name says what it holds and a Get can be verified.
//
// # Why packs
//
// A JetStream object-store Get costs several round trips (object info, a
// consumer, the chunks), so one object per file would make a 20,000-file
// workspace cost 20,000 Gets to restore. Capture instead appends new contents
// to a pack until it reaches about PackSize and uploads it whole; Restore
// fetches each pack it needs once and streams the ranges it wants in offset
// order.
//
// # Incremental captures
//
// Capture takes the previous manifest: a file whose sha256 appears anywhere
// in it reuses that pack and offset, so a turn that changed one file uploads
// that file and a new manifest. A Cache keyed by (path, size, mtime, inode)
// spares re-hashing files that did not change. Packs are never deleted here;
// retention is the caller's concern (a pack is alive while a kept manifest
// names it).
//
// # Safety
//
// Manifests come from a shared store and are decoded as untrusted input:
// paths must be relative, clean and free of "..", symlinks must resolve
// inside their tree, and nothing may sit below a file or a symlink. Restore
// writes through an os.Root, removes whatever is in a file's way before
// creating it (so it never writes through an existing link), and checks each
// file's sha256 as it streams it.
package snapshot
