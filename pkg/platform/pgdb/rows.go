package pgdb

import "github.com/jackc/pgx/v5"

// AddTo reads rows of one text column into set, and closes them.
func AddTo(rows pgx.Rows, set map[string]bool) error {
	var v string
	_, err := pgx.ForEachRow(rows, []any{&v}, func() error {
		set[v] = true
		return nil
	})
	return err
}
