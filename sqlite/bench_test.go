package sqlite_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/internal/workload"
	"github.com/sessiondb/sessiondb/sqlite"
)

// The search benchmarks run on a 100k-message database generated once and
// cached in os.TempDir() (see BENCHMARKS.md). Change benchCacheName whenever
// the generator changes, so that a stale cache is never measured.
const (
	benchMessages   = 100_000
	benchPerSession = 50
	benchCacheName  = "sessiondb-bench-100k-v1.db"
	benchSeed1      = 42
	benchSeed2      = 20260501
	benchBaseTime   = 1767225600.0 // 2026-01-01T00:00:00Z
)

// benchQueries are the query classes of BenchmarkSearch. The generator
// guarantees each one matches a realistic fraction of the messages.
var benchQueries = []struct{ name, query string }{
	{"frequent_word", "docker"},       // word index, ~5% of messages
	{"phrase", `"docker deployment"`}, // word index, quoted phrase
	{"prefix", "deploy*"},             // word index, prefix query
	{"cjk_3plus", "大别山项目"},            // bigram index, 5 Han characters
	{"cjk_3plus_ja", "東京の天気"},         // bigram index, Kanji + Hiragana
	{"cjk_2char", "项目"},               // bigram index, one bigram
	{"cjk_2char_zh_rare", "通信"},       // bigram index, a less frequent bigram
	{"cjk_2char_ko", "서울"},            // bigram index, Hangul
	{"cjk_2char_like", "山"},           // lone CJK character: LIKE scan of every row
}

// BenchmarkSearch measures Search with default options (20 hits, context
// included) per query class and reports the median and 95th percentile
// latency of the iterations next to ns/op.
func BenchmarkSearch(b *testing.B) {
	db := MustOpenPath(b, benchDB(b))
	for _, q := range benchQueries {
		b.Run(q.name, func(b *testing.B) {
			matches := countMatches(b, db, q.query)
			hits, err := db.Search(ctx, q.query, sessiondb.SearchOptions{}) // warm-up
			if err != nil {
				b.Fatalf("search %q: %v", q.query, err)
			}
			if len(hits) == 0 {
				b.Fatalf("search %q: no hits; the generator must guarantee some", q.query)
			}
			lat := make([]time.Duration, 0, 256)
			for b.Loop() {
				start := time.Now()
				if _, err := db.Search(ctx, q.query, sessiondb.SearchOptions{}); err != nil {
					b.Fatalf("search %q: %v", q.query, err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
			b.ReportMetric(float64(len(hits)), "hits")
			b.ReportMetric(float64(matches), "matches")
		})
	}
}

// countMatches returns how many messages query finds in all (no limit,
// no context).
func countMatches(b *testing.B, db *sqlite.DB, query string) int {
	b.Helper()
	hits, err := db.Search(ctx, query, sessiondb.SearchOptions{Limit: math.MaxInt32, Fields: []string{"id"}})
	if err != nil {
		b.Fatalf("count %q: %v", query, err)
	}
	return len(hits)
}

// reportLatency reports the p50 and p95 of lat in milliseconds.
func reportLatency(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(lat, 0.50)), "p50-ms")
	b.ReportMetric(ms(percentile(lat, 0.95)), "p95-ms")
}

// percentile interpolates linearly between the closest ranks of sorted
// samples (numpy's default, as in /work/shared/bench/README.md).
func percentile(sorted []time.Duration, q float64) time.Duration {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + time.Duration(frac*float64(sorted[i+1]-sorted[i]))
}

// benchDB returns a private copy of the cached benchmark database, building
// the cache first when it is missing.
func benchDB(b *testing.B) string {
	b.Helper()
	cache := filepath.Join(os.TempDir(), benchCacheName)
	if _, err := os.Stat(cache); errors.Is(err, os.ErrNotExist) {
		tmp := fmt.Sprintf("%s.build-%d", cache, os.Getpid())
		removeDBFiles(tmp)
		start := time.Now()
		buildBenchDB(b, tmp, benchMessages)
		if err := os.Rename(tmp, cache); err != nil {
			removeDBFiles(tmp)
			b.Fatal(err)
		}
		removeDBFiles(tmp)
		fi, _ := os.Stat(cache)
		b.Logf("built %s: %d messages in %s, %.1f MiB", cache, benchMessages,
			time.Since(start).Round(time.Millisecond), float64(fi.Size())/(1<<20))
	} else if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(b.TempDir(), "state.db")
	copyFile(b, cache, dst)
	return dst
}

func removeDBFiles(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		os.Remove(p)
	}
}

func copyFile(b *testing.B, src, dst string) {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

// buildBenchDB writes a deterministic database of about messages/50
// sessions of 20–80 messages each (messages in all) to path through the
// public API, one AppendMessages transaction per session, and closes it so
// that the WAL is checkpointed into the file.
func buildBenchDB(b *testing.B, path string, messages int) {
	b.Helper()
	db, err := sqlite.Open(path, sqlite.Options{Synchronous: "NORMAL"})
	if err != nil {
		b.Fatalf("open %s: %v", path, err)
	}
	g := newBenchGen()
	for i, n := range g.sessionLengths(messages, max(1, messages/benchPerSession)) {
		lang := g.lang()
		ns := sessiondb.NewSession{
			ID:        fmt.Sprintf("bench-%05d-%08x", i, g.r.Uint32()),
			Source:    workload.Sources.Pick(g.r),
			Model:     workload.Models.Pick(g.r),
			StartedAt: benchBaseTime + float64(i)*1200 + g.r.Float64()*600,
		}
		if _, err := db.CreateSession(ctx, ns); err != nil {
			b.Fatalf("create session %d: %v", i, err)
		}
		ms := g.session(ns.ID, lang, ns.StartedAt, n)
		if _, err := db.AppendMessages(ctx, ns.ID, ms); err != nil {
			b.Fatalf("append to session %d: %v", i, err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatalf("close %s: %v", path, err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		b.Fatalf("%s-wal still holds %d bytes after Close", path, fi.Size())
	}
}

// ---- workload generator (after /work/shared/bench/make_workload.py) ----

// benchVocab is English technical vocabulary in frequency order. "docker"
// and the deploy* words are left out: the generator adds them at fixed
// rates (see benchGen.english).
var benchVocab = strings.Fields(`
the to and a of is in for it this that with on be not we can you i
file error run config test build server session search version
check update command need now will should use path using
kubernetes output message token database install log branch python
container request worker fix data script release function api module
service user change code failed status port model cache gateway time
commit query index memory directory timeout schema migration pipeline
network process tool issue value key local default environment line
json result package job cluster image state type name start return
string option client event stream node read write table sqlite field
response health retry backup auth host queue thread lock restart shell
proxy certificate volume mount agent plugin secret debug trace replica
upstream rollback staging production helm ingress terraform ansible
webhook callback payload handler router middleware endpoint latency
throughput benchmark profile heap goroutine mutex channel buffer socket
tls dns nginx redis postgres kafka rabbitmq celery cron systemd journal
wal vacuum checkpoint transaction fsync pragma trigger tokenizer
snippet rank lineage compression telegram discord slack whatsapp
markdown yaml toml dockerfile makefile compose manifest artifact
registry tag digest layer overlay cgroup namespace pod daemonset
statefulset configmap autoscaler quota eviction scheduler affinity
sidecar mesh envoy istio grafana prometheus alertmanager exporter
histogram quantile percentile jitter backoff idempotent dedupe shard
partition replication consensus raft leader follower quorum snapshot
compaction tombstone bloom filter sstable memtable ulid uuid nonce hmac
jwt oauth ldap kerberos selinux seccomp ebpf perf flamegraph pprof
valgrind sanitizer fuzzing regression bisect rebase squash worktree
submodule monorepo bazel gradle cargo rustc wasm firecracker numa epoll`)

var (
	benchBigrams = []string{"rate limit", "health check", "connection pool", "pull request", "unit test",
		"smoke test", "stack trace", "exit code", "load balancer", "feature flag", "disk space",
		"access token", "retry budget", "session search", "context window", "prompt cache"}
	benchHyphenated = []string{"pre-commit", "rate-limit", "read-only", "end-to-end", "chat-send",
		"follow-up", "opt-in", "multi-tenant", "zero-downtime", "cross-compile", "self-hosted", "on-call"}
	benchIdents = []string{"main.go", "hermes_state.py", "config.yaml", "Dockerfile", "go.mod", "README.md",
		"/var/log/syslog", "src/index.ts", "v1.2.3", "my-app.config.ts", "requirements.txt", "localhost:8080"}
	benchDeploy = []string{"deploy", "deployment", "deployed", "deploying", "deploys"}

	// Chinese words in frequency order: 项目 is the most frequent word,
	// 大别山项目 (a project name) and 通信 are mid-frequency.
	benchZH = strings.Fields(`
项目 部署 数据库 迁移 服务器 配置 文件 错误 日志 测试 大别山项目 版本 更新 用户 会话 通信
搜索 索引 容器 镜像 集群 节点 网络 端口 证书 缓存 内存 进程 线程 任务 队列 接口 请求 响应
超时 重试 回滚 备份 权限 密钥 令牌 模型 代码 分支 提交 合并 发布 环境 变量 脚本
大别山 第二阶段 下周 开始 进展 顺利 翻译 英文 文档 计划 三步 问题 解决 方案 检查
性能 优化 延迟 吞吐量 基准 分析 报告 监控 告警 指标 健康 状态 重启 升级 依赖 安装
中文 分词 全文 检索 查询 结果 排序 分页 压缩 导出 导入 清理 会议 明天 今天 客户`)
	benchZHChars = strings.Split("库表键值存读写查删改日月年人事物山", "")
	benchZHFill  = []string{"的", "了", "在", "是", "和", "把", "请", "我们", "已经", "需要", "可以", "正在", "还没"}
	benchZHEnd   = []string{"。", "，", "？", "！", "；"}

	benchJA = strings.Fields(`
データベース 移行 サーバー 東京の天気 設定 ファイル エラー ログ テスト 東京 天気 明日 雨
バージョン 更新 ユーザー セッション 検索 インデックス コンテナ イメージ クラスタ 通信
ネットワーク 証明書 キャッシュ メモリ プロセス タスク キュー 応答 タイムアウト
再試行 ロールバック バックアップ 権限 トークン モデル コード ブランチ 環境 変数
会議 資料 翻訳 英語 日本語 全文 形態素 解析 結果 性能 最適化 監視 障害 対応`)
	benchJAPart = []string{"は", "が", "を", "に", "で", "の", "と", "も", "から", "まで"}
	benchJAEnd  = []string{"です。", "ます。", "しました。", "してください。", "ですか？", "でした。", "予定です。"}

	benchKO = strings.Fields(`
서울 날씨 알려줘 데이터베이스 마이그레이션 서버 설정 파일 오류 로그 테스트 버전
업데이트 사용자 세션 검색 인덱스 컨테이너 이미지 클러스터 네트워크 인증서 캐시
메모리 프로세스 작업 대기열 응답 시간초과 재시도 롤백 백업 권한 토큰 모델 코드
배포 환경 변수 회의 자료 번역 영어 한국어 전문 결과 성능 최적화 모니터링 장애
내일 오늘 확인 부탁 해주세요 했습니다 입니다 있습니다 없습니다`)
)

type benchGen struct {
	r                     *rand.Rand
	en, zh, ja, ko, en120 workload.Weighted
	calls                 int
}

func newBenchGen() *benchGen {
	return &benchGen{
		r:     rand.New(rand.NewPCG(benchSeed1, benchSeed2)),
		en:    workload.Zipf(benchVocab, 1.1),
		en120: workload.Zipf(benchVocab[:120], 1.1),
		zh:    workload.Zipf(benchZH, 0.9),
		ja:    workload.Zipf(benchJA, 0.9),
		ko:    workload.Zipf(benchKO, 0.9),
	}
}

func (g *benchGen) choice(list []string) string { return list[g.r.IntN(len(list))] }

// between returns an int in [lo, hi].
func (g *benchGen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// length draws a lognormal word count clamped to [lo, hi].
func (g *benchGen) length(mu, sigma float64, lo, hi int) int {
	return max(lo, min(hi, int(math.Exp(g.r.NormFloat64()*sigma+mu))))
}

// sessionLengths returns n session lengths of 20–80 messages summing to
// exactly total.
func (g *benchGen) sessionLengths(total, n int) []int {
	lens := make([]int, n)
	sum := 0
	for i := range lens {
		lens[i] = g.between(20, 80)
		sum += lens[i]
	}
	for i := 0; sum != total; i = (i + 1) % n {
		switch {
		case sum < total:
			lens[i]++
			sum++
		case lens[i] > 2:
			lens[i]--
			sum--
		}
	}
	return lens
}

// lang is a turn language: Chinese 10%, Japanese 6%, Korean 4%, else English.
func (g *benchGen) lang() string {
	switch x := g.r.Float64(); {
	case x < 0.10:
		return "zh"
	case x < 0.16:
		return "ja"
	case x < 0.20:
		return "ko"
	}
	return "en"
}

// english is n words of Zipf-distributed technical English in sentences,
// with technical bigrams, hyphenated terms and identifiers mixed in. It
// adds "docker" (2.5%), "docker deployment" (1%) and a deploy* word (3%).
func (g *benchGen) english(n int) string {
	words := make([]string, 0, n+2)
	for range n {
		switch x := g.r.Float64(); {
		case x < 0.03:
			words = append(words, g.choice(benchBigrams))
		case x < 0.04:
			words = append(words, g.choice(benchHyphenated))
		case x < 0.05:
			words = append(words, g.choice(benchIdents))
		default:
			words = append(words, g.en.Pick(g.r))
		}
	}
	insert := func(w string) { words = slices.Insert(words, g.r.IntN(len(words)+1), w) }
	if g.r.Float64() < 0.025 {
		insert("docker")
	}
	if g.r.Float64() < 0.01 {
		insert("docker deployment")
	}
	if g.r.Float64() < 0.03 {
		insert(g.choice(benchDeploy))
	}
	var sb strings.Builder
	for len(words) > 0 {
		k := min(len(words), g.between(6, 18))
		sent := words[:k]
		words = words[k:]
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strings.ToUpper(sent[0][:1]) + sent[0][1:])
		for _, w := range sent[1:] {
			sb.WriteByte(' ')
			sb.WriteString(w)
		}
		sb.WriteString(g.choice([]string{".", ".", ".", "?", "!", ":"}))
	}
	return sb.String()
}

func (g *benchGen) chinese(n int) string {
	var sb strings.Builder
	for range n {
		switch x := g.r.Float64(); {
		case x < 0.08:
			sb.WriteString(g.choice(benchZHChars))
		case x < 0.30:
			sb.WriteString(g.choice(benchZHFill))
		default:
			sb.WriteString(g.zh.Pick(g.r))
		}
		if g.r.Float64() < 0.12 {
			sb.WriteString(g.choice(benchZHEnd))
		}
		if g.r.Float64() < 0.02 {
			sb.WriteString(" " + g.choice(benchVocab[10:80]) + " ")
		}
	}
	sb.WriteString("。")
	return sb.String()
}

func (g *benchGen) japanese(n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteString(g.ja.Pick(g.r))
		if g.r.Float64() < 0.8 {
			sb.WriteString(g.choice(benchJAPart))
		} else {
			sb.WriteString("、")
		}
		if g.r.Float64() < 0.1 {
			sb.WriteString(g.choice(benchJAEnd))
		}
	}
	sb.WriteString(g.choice(benchJAEnd))
	return sb.String()
}

func (g *benchGen) korean(n int) string {
	var sentences []string
	for n > 0 {
		k := min(n, g.between(3, 8))
		words := make([]string, k)
		for i := range words {
			words[i] = g.ko.Pick(g.r)
		}
		sentences = append(sentences, strings.Join(words, " ")+g.choice([]string{".", ".", "?"}))
		n -= k
	}
	return strings.Join(sentences, " ")
}

// prose is text in lang of lognormal length: non-English text is mixed with
// English a quarter of the time, English text embeds a CJK word 3% of the
// time.
func (g *benchGen) prose(mu, sigma float64, lo, hi int, lang string) string {
	n := g.length(mu, sigma, lo, hi)
	var s string
	switch lang {
	case "zh":
		s = g.chinese(max(2, n/2))
	case "ja":
		s = g.japanese(max(2, n/3))
	case "ko":
		s = g.korean(max(2, n/2))
	default:
		s = g.english(n)
		if g.r.Float64() < 0.03 {
			words := strings.Split(s, " ")
			w := g.choice([]string{"部署", "项目", "数据库", "日志", "東京", "설정", "通信"})
			s = strings.Join(slices.Insert(words, g.r.IntN(len(words)+1), w), " ")
		}
	}
	if lang != "en" && g.r.Float64() < 0.25 {
		s += " " + g.english(g.between(3, 12))
	}
	return s
}

func (g *benchGen) mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// toolArgs returns the arguments of a call to the tool name.
func (g *benchGen) toolArgs(name string) map[string]any {
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = g.en120.Pick(g.r)
		}
		return strings.Join(w, " ")
	}
	switch name {
	case "terminal":
		return map[string]any{"command": g.choice(workload.ShellCommands), "timeout": []int{30, 60, 120, 300}[g.r.IntN(4)]}
	case "read_file", "write_file", "patch":
		path := g.choice(benchIdents[:7])
		if g.r.IntN(2) == 0 {
			path = "src/" + g.choice(benchVocab[20:200]) + g.choice([]string{".go", ".py", ".ts", ".md"})
		}
		a := map[string]any{"path": path}
		switch name {
		case "write_file":
			a["content"] = words(g.between(10, 60))
		case "patch":
			a["old_string"], a["new_string"] = words(g.between(2, 8)), words(g.between(2, 8))
		}
		return a
	case "search_files":
		return map[string]any{"pattern": g.choice(benchVocab[20:250]), "path": "."}
	case "web_search":
		return map[string]any{"query": words(g.between(2, 6))}
	case "browser_navigate":
		return map[string]any{"url": "https://example.com/" + g.choice(benchVocab[20:250])}
	case "execute_code":
		return map[string]any{"code": fmt.Sprintf("print(%q)", words(g.between(2, 6)))}
	case "session_search":
		return map[string]any{"query": g.choice(benchVocab[10:150])}
	case "memory":
		return map[string]any{"action": "add", "content": words(g.between(5, 20))}
	}
	return map[string]any{"goal": words(g.between(5, 15))}
}

// toolResult is the JSON text a tool returns.
func (g *benchGen) toolResult(name, lang string) string {
	switch name {
	case "terminal":
		lines := make([]string, g.between(1, 12))
		for i := range lines {
			lines[i] = g.english(g.between(4, 14))
		}
		out := strings.Join(lines, "\n")
		if g.r.Float64() < 0.08 {
			out += "\n" + g.prose(4, 0.6, 5, 200, lang)
		}
		return g.mustJSON(map[string]any{"output": out, "exit_code": []int{0, 0, 0, 0, 1, 2, 127}[g.r.IntN(7)], "error": nil})
	case "read_file", "search_files":
		l := lang
		if g.r.Float64() < 0.8 {
			l = "en"
		}
		return g.mustJSON(map[string]any{"content": g.prose(4.8, 0.9, 10, 1200, l), "total_lines": g.between(5, 2000)})
	case "web_search", "browser_navigate":
		res := make([]map[string]any, g.between(1, 5))
		for i := range res {
			res[i] = map[string]any{
				"title":   g.english(g.between(3, 8)),
				"url":     fmt.Sprintf("https://example.com/%d", g.r.IntN(99999)),
				"snippet": g.prose(3.2, 0.5, 8, 60, lang),
			}
		}
		return g.mustJSON(map[string]any{"success": true, "results": res})
	}
	if g.r.Float64() < 0.05 {
		return g.mustJSON(map[string]any{"error": "Error: " + g.english(g.between(5, 20))})
	}
	return g.mustJSON(map[string]any{"success": true, "result": g.prose(3, 0.8, 3, 120, lang)})
}

type benchCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // JSON text
	} `json:"function"`
}

// turn is one user turn: the user message, up to six rounds of an
// assistant message calling tools followed by the tool results, and the
// final assistant answer; assistant messages often carry reasoning.
func (g *benchGen) turn(sid, lang string, ts *float64) []sessiondb.NewMessage {
	var ms []sessiondb.NewMessage
	add := func(m sessiondb.NewMessage) {
		*ts += 2 + g.r.Float64()*40
		m.SessionID, m.Timestamp = sid, *ts
		ms = append(ms, m)
	}
	tokens := func(lo, hi int) *int64 { n := int64(g.between(lo, hi)); return &n }
	reasoning := func(p, mu float64, hi int) *string {
		if g.r.Float64() >= p {
			return nil
		}
		l := lang
		if g.r.Float64() < 0.7 {
			l = "en"
		}
		s := g.prose(mu, 0.7, 5, hi, l)
		return &s
	}

	add(sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: g.prose(2.6, 0.9, 1, 250, lang)})
	rounds := []int{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 6}[g.r.IntN(21)]
	for range rounds {
		calls := make([]benchCall, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3}[g.r.IntN(15)])
		for i := range calls {
			g.calls++
			c := &calls[i]
			c.ID = fmt.Sprintf("call_%08x", uint32(g.calls)*2654435761)
			c.Type = "function"
			c.Function.Name = workload.Tools.Pick(g.r)
			c.Function.Arguments = g.mustJSON(g.toolArgs(c.Function.Name))
		}
		pre := ""
		if g.r.Float64() < 0.35 {
			pre = g.prose(2.5, 0.7, 3, 60, lang)
		}
		add(sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: pre,
			ToolCalls: json.RawMessage(g.mustJSON(calls)), Reasoning: reasoning(0.6, 3.3, 200),
			FinishReason: "tool_calls", TokenCount: tokens(20, 400)})
		for _, c := range calls {
			add(sessiondb.NewMessage{Role: sessiondb.RoleTool, Content: g.toolResult(c.Function.Name, lang),
				ToolName: c.Function.Name, ToolCallID: c.ID})
		}
	}
	add(sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: g.prose(3.8, 0.9, 2, 700, lang),
		Reasoning: reasoning(0.5, 3.5, 300), FinishReason: "stop", TokenCount: tokens(30, 1500)})
	return ms
}

// session returns exactly n messages of a session that leans to lang and
// switches language on half of its turns.
func (g *benchGen) session(sid, lang string, started float64, n int) []sessiondb.NewMessage {
	ts := started
	var ms []sessiondb.NewMessage
	for len(ms) < n {
		l := lang
		if g.r.IntN(2) == 0 {
			l = g.lang()
		}
		ms = append(ms, g.turn(sid, l, &ts)...)
	}
	return ms[:n]
}
