package streammgr

import (
	"embed"
	"io/fs"

	"clopen.dev/pkg/platform/pgdb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Schema is the part of the database streammgr owns, with its migrations.
var Schema = pgdb.Schema{Name: "streammgr", Migrations: mustSub(migrations, "migrations")}

func mustSub(f fs.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return s
}
