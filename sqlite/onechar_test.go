package sqlite_test

import (
	"reflect"
	"testing"

	"github.com/sessiondb/sessiondb"
)

// TestSearchOneCJKCharacter: a query of one CJK character finds it inside a
// CJK run (数据库迁移: the word index), at the start of the CJK part of a
// word that begins with Latin letters (Agent通信: only the bigram index has
// 通信), and alone; the bigram range stops before the next code point (逛,
// U+901B, follows 通, U+901A).
func TestSearchOneCJKCharacter(t *testing.T) {
	db := MustOpen(t)
	if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: "s", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, c := range []string{"数据库迁移", "Agent通信", "库", "逛街", "deploy到服务器"} {
		id, err := db.AppendMessage(ctx, sessiondb.NewMessage{SessionID: "s", Role: "user", Content: c})
		if err != nil {
			t.Fatal(err)
		}
		ids[c] = id
	}
	for q, want := range map[string][]string{
		"库": {"库", "数据库迁移"},
		"通": {"Agent通信"},
		"到": {"deploy到服务器"},
		"逛": {"逛街"},
		"迁": {"数据库迁移"},
	} {
		hits, err := db.Search(ctx, q, sessiondb.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]bool{}
		for _, h := range hits {
			got[h.ID] = true
		}
		wantIDs := map[int64]bool{}
		for _, c := range want {
			wantIDs[ids[c]] = true
		}
		if !reflect.DeepEqual(got, wantIDs) {
			t.Errorf("search %q: ids %v, want %v (%v)", q, got, wantIDs, want)
		}
	}
}
