package postgres

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/sessiondb/sessiondb/internal/testenv"
)

// Every value the bulk paths hand COPY comes back from the server as it
// went in: text with backslashes, tabs, newlines, carriage returns, the
// marker bytes of the search columns and escaped NUL; NULLs of each kind;
// integers, floats (infinities, the shortest exact form), booleans, bytea
// with every byte, and a tsvector's text form.
func TestCopyTextRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, testenv.Postgres(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.pool.Exec(ctx, `CREATE TABLE copied (n int PRIMARY KEY, t text, tp text, i bigint, f double precision,
		b boolean, y bytea, v tsvector)`); err != nil {
		t.Fatal(err)
	}
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	s := `a\b	c` + "\n\r\\N\\.\x02項\x03" + toPG("nul\x00 \ue000")
	tsv := "'\x02項' 'a\\\\b':1,3 'it''s':2"
	rows := [][]any{
		{1, s, &s, int64(math.MinInt64), 0.1, true, every, tsv},
		{2, nil, (*string)(nil), int64(7), math.Inf(-1), false, []byte(nil), nil},
		{3, "", new(string), 0, math.Inf(1), false, []byte{}, ""},
		{4, "\\.", nil, int64(math.MaxInt64), math.MaxFloat64, true, []byte(`\x`), "x"},
	}
	var text []byte
	for _, r := range rows {
		if text, err = appendCopyRow(text, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := appendCopyRow(nil, []any{struct{}{}}); err == nil {
		t.Error("a value of an unknown type was encoded")
	}
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tag, err := conn.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(text), "COPY copied FROM STDIN")
	if err != nil || tag.RowsAffected() != int64(len(rows)) {
		t.Fatalf("copy: %v rows, %v", tag.RowsAffected(), err)
	}
	for _, want := range rows {
		var (
			tv, tpv *string
			i       *int64
			f       *float64
			b       *bool
			y       []byte
			v       *string
		)
		if err := db.pool.QueryRow(ctx, "SELECT t, tp, i, f, b, y, v::text FROM copied WHERE n = $1", want[0]).
			Scan(&tv, &tpv, &i, &f, &b, &y, &v); err != nil {
			t.Fatal(err)
		}
		str := func(v any) any {
			switch x := v.(type) {
			case string:
				return &x
			case *string:
				return x
			}
			return (*string)(nil)
		}
		check := func(name string, got, want any) {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("row %v, %s: got %#v, want %#v", want, name, got, want)
			}
		}
		check("text", tv, str(want[1]))
		check("text pointer", tpv, str(want[2]))
		if n, ok := want[3].(int64); ok {
			check("bigint", *i, n)
		}
		check("float", *f, want[4])
		check("bool", *b, want[5])
		wy, _ := want[6].([]byte)
		if !bytes.Equal(y, wy) || (y == nil) != (wy == nil) {
			t.Errorf("row %v: bytea %q, want %q", want[0], y, wy)
		}
		if want[0] == 1 {
			var canon string
			if err := db.pool.QueryRow(ctx, "SELECT $1::tsvector::text", tsv).Scan(&canon); err != nil {
				t.Fatal(err)
			}
			if deref(v) != canon || !strings.Contains(canon, "\x02項") {
				t.Errorf("tsvector %q, want %q", deref(v), canon)
			}
		}
	}
}
