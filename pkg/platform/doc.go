// Package platform holds the plumbing every Clopen service shares: connecting
// to NATS and Postgres, applying migrations, health endpoints, logging and the
// test helpers that start real infrastructure. Each concern is its own
// sub-package; this package itself is empty.
package platform
