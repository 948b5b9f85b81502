// Package source brings a project's files into a workspace and sends a
// session's work back: it unpacks an uploaded archive (tar, tar.gz, zip)
// and clones or pushes a git repository over https.
//
// Both inputs are a tenant's and must be treated as hostile. Extract
// writes only inside the directory it is given, through an [os.Root], and
// refuses entries that would escape it, special files and archives that
// decompress past the configured [Limits]; on any refusal it removes what
// it wrote. Clone and Push run the git binary without a shell, with hooks,
// submodules and every transport but https disabled, and hand git the
// credential through an askpass helper that reads it from the child's
// environment, so the secret never reaches argv, a URL, .git/config or an
// error message.
package source
