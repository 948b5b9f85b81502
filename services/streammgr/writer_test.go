package streammgr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"clopen.dev/pkg/events"
	"clopen.dev/services/streammgr/internal/router"
)

func TestRefusedOnlyForWhatABatchHolds(t *testing.T) {
	_, nan := json.Marshal(math.NaN())
	for _, tt := range []struct {
		give        error
		wantRefused bool
		wantLost    bool
	}{
		{give: &pgconn.PgError{Code: "22P05"}, wantRefused: true}, // \u0000 in jsonb
		{give: &pgconn.PgError{Code: "22021"}, wantRefused: true}, // NUL in text
		{give: &pgconn.PgError{Code: "23503"}, wantRefused: true}, // foreign key
		{give: &pgconn.PgError{Code: "23514"}, wantRefused: true}, // check constraint
		{give: fmt.Errorf("encode message: %w", nan), wantRefused: true},
		{give: &pgconn.PgError{Code: "40P01"}},                 // deadlock: retried
		{give: &pgconn.PgError{Code: "40001"}},                 // serialization: retried
		{give: &pgconn.PgError{Code: "55P03"}},                 // lock timeout: retried
		{give: &pgconn.PgError{Code: "42P01"}},                 // missing table: a deployment fault, retried
		{give: &pgconn.PgError{Code: "53300"}},                 // too many connections: retried
		{give: &pgconn.PgError{Code: "57P01"}, wantLost: true}, // admin shutdown
		{give: &pgconn.PgError{Code: "08006"}, wantLost: true}, // connection failure
		{give: fmt.Errorf("append: %w", io.ErrUnexpectedEOF), wantLost: true},
		{give: errors.New("something else")},
	} {
		if got := refused(tt.give); got != tt.wantRefused {
			t.Errorf("refused(%v) = %v, want %v", tt.give, got, tt.wantRefused)
		}
		if got := connectionLost(tt.give); got != tt.wantLost {
			t.Errorf("connectionLost(%v) = %v, want %v", tt.give, got, tt.wantLost)
		}
	}
}

func TestStateOnlyKeepsTheRunsStateNotTheContent(t *testing.T) {
	summary := "a\x00b"
	give := router.Outcome{Epoch: 2, Seq: 9, Store: true, Terminal: events.RunCompleted,
		Inserts: []router.Message{{RowID: "r"}}, Updates: []router.Update{{RowID: "r"}},
		RateLimit: &router.RateLimit{AccountID: "x"},
		Run:       router.RunChange{State: events.RunCompleted, Epoch: 2, LastSeq: 9, Error: "bad\x00byte"},
		Session:   router.SessionChange{Head: "r", Summary: &summary, AddMessages: 1, HeadSessionID: "s\x00"},
		Chat:      []events.ChatEvent{{Type: events.ChatTypeComplete}}}
	got := stateOnly(give)
	want := router.Outcome{Epoch: 2, Seq: 9, Store: true, Terminal: events.RunCompleted,
		Run:     router.RunChange{State: events.RunCompleted, Epoch: 2, LastSeq: 9, Error: "badbyte"},
		Session: router.SessionChange{HeadSessionID: "s"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stateOnly = %+v, want %+v", got, want)
	}
}
