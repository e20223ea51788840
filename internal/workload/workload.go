// Package workload generates realistic agent transcripts for benchmarks:
// sessions of user turns, assistant tool calls with JSON arguments, tool
// results, reasoning and final answers, in English of varied length with
// about 15% of the messages in Chinese, Japanese or Korean.
//
// Everything is deterministic for a seed (math/rand/v2 PCG). A Plan fixes
// each session's source, model and length; each session's messages come
// from a Stream of its own, seeded by the plan seed and the session index,
// so the content does not depend on which writer appends which session or
// in what order. Streams generate lazily, one turn at a time, so a large
// workload never sits in memory.
package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/sessiondb/sessiondb"
)

// Queries are the search query classes of a benchmark, in report order:
// the vocabulary weights make a generated workload of a few thousand
// messages match each of them.
var Queries = []struct{ Label, Query string }{
	{"word", "docker"},                // a frequent English word
	{"phrase", `"docker deployment"`}, // a quoted phrase
	{"prefix", "deploy*"},             // a prefix query
	{"cjk3", "数据库迁移"},                 // three or more CJK characters
	{"cjk2", "项目"},                    // two CJK characters
}

// PRNG streams of the plan and of session i (planStream + 1 + i).
const planStream = 0x5e55_10db

// Plan is the shape of a workload: one entry per session.
type Plan struct {
	seed     uint64
	Sessions []Session
}

// Session is one planned session. Messages is how many messages its
// Stream yields.
type Session struct {
	Index    int
	Source   string
	Model    string
	Messages int
}

// NewPlan plans sessions sessions holding messages messages in all, with
// skewed (lognormal) lengths of at least one message each.
func NewPlan(seed uint64, sessions, messages int) (*Plan, error) {
	if sessions < 1 {
		return nil, fmt.Errorf("workload: need at least one session, got %d", sessions)
	}
	if messages < sessions {
		return nil, fmt.Errorf("workload: %d messages cannot fill %d sessions (at least one each)", messages, sessions)
	}
	r := rand.New(rand.NewPCG(seed, planStream))
	raw := make([]float64, sessions)
	total := 0.0
	for i := range raw {
		raw[i] = math.Exp(r.NormFloat64())
		total += raw[i]
	}
	p := &Plan{seed: seed, Sessions: make([]Session, sessions)}
	spare, sum := messages-sessions, 0
	for i := range p.Sessions {
		n := 1 + int(float64(spare)*raw[i]/total)
		p.Sessions[i] = Session{Index: i, Source: Sources.Pick(r), Model: Models.Pick(r), Messages: n}
		sum += n
	}
	for i := 0; sum < messages; i = (i + 1) % sessions {
		p.Sessions[i].Messages++
		sum++
	}
	return p, nil
}

// Stream returns the message generator of session i, whose messages carry
// sessionID.
func (p *Plan) Stream(i int, sessionID string) *Stream {
	r := rand.New(rand.NewPCG(p.seed, planStream+1+uint64(i)))
	s := &Stream{g: gen{r: r}, id: sessionID, left: p.Sessions[i].Messages}
	s.lang = s.g.lang()
	return s
}

// Stream yields one session's messages turn by turn.
type Stream struct {
	g    gen
	id   string
	lang string // the session's usual language; single turns switch
	left int
}

// Remaining returns how many messages the stream has still to yield.
func (s *Stream) Remaining() int { return s.left }

// NextTurn returns the next turn: a user message, zero or more rounds of an
// assistant message with tool calls followed by one tool result per call,
// and the final assistant answer, cut at the session's planned length. It
// returns nil once the session is complete.
func (s *Stream) NextTurn() []sessiondb.NewMessage {
	if s.left <= 0 {
		return nil
	}
	lang := s.lang
	if s.g.r.Float64() < 0.5 {
		lang = s.g.lang()
	}
	turn := s.g.turn(s.id, lang)
	if len(turn) > s.left {
		turn = turn[:s.left]
	}
	s.left -= len(turn)
	return turn
}

// ---- vocabulary ----

// english holds technical words in frequency order (Zipf weights). The
// deploy* family and "docker" sit high enough to be frequent search terms.
var english = Zipf(strings.Fields(`
the to and a of is in for it this that with on be not we can you i
docker file error run config test build server session search version
check update deployment command need now will should use path using
kubernetes output message token database install log branch python
container request worker fix data script release function api module
service user change code failed status port model cache gateway time
commit query index memory directory timeout schema migration pipeline
network process tool issue value key local default environment line
json result package job cluster image state type name start return
deploy string option client event stream node read write table sqlite
field response health retry backup auth host queue thread lock restart
shell proxy certificate volume mount agent plugin secret debug trace
replica upstream rollback staging production helm ingress terraform
webhook callback payload handler router middleware endpoint latency
throughput benchmark profile heap goroutine mutex channel buffer socket
deployed tls dns nginx redis postgres kafka celery cron systemd journal
wal vacuum checkpoint transaction fsync pragma trigger tokenizer
snippet rank lineage compression telegram discord slack whatsapp
markdown yaml toml dockerfile makefile compose manifest artifact
registry tag digest layer overlay cgroup namespace pod deploying
daemonset statefulset configmap autoscaler quota eviction scheduler
sidecar envoy grafana prometheus exporter histogram quantile percentile
jitter backoff idempotent dedupe shard partition replication consensus
raft leader follower quorum snapshot compaction tombstone bloom filter
uuid nonce hmac jwt oauth ldap seccomp ebpf perf flamegraph pprof
fuzzing regression bisect rebase squash worktree submodule monorepo`), 1.1)

var (
	bigrams = []string{"docker deployment", "rate limit", "health check", "connection pool",
		"pull request", "unit test", "smoke test", "stack trace", "exit code", "load balancer",
		"feature flag", "disk space", "access token", "context window", "prompt cache"}
	hyphenated = []string{"pre-commit", "rate-limit", "read-only", "end-to-end", "follow-up",
		"opt-in", "multi-tenant", "zero-downtime", "cross-compile", "self-hosted", "on-call"}
	idents = []string{"main.go", "config.yaml", "Dockerfile", "go.mod", "README.md", "state.db",
		"/var/log/syslog", "src/index.ts", "v1.2.3", "requirements.txt", "localhost:8080", "127.0.0.1"}

	chinese = Zipf(strings.Fields(`
项目 部署 数据库 迁移 服务器 配置 文件 错误 日志 测试 数据库迁移 版本 更新 用户 会话
搜索 索引 容器 镜像 集群 节点 网络 端口 证书 缓存 内存 进程 线程 任务 队列 接口 请求
响应 超时 重试 回滚 备份 权限 密钥 令牌 模型 代码 分支 提交 合并 发布 环境 变量 脚本
第二阶段 下周 开始 进展 顺利 翻译 文档 计划 问题 解决 方案 检查 性能 优化 延迟 吞吐量
基准 分析 报告 监控 告警 指标 健康 状态 重启 升级 依赖 安装 分词 全文 检索 查询 结果`), 0.9)
	chineseChars = strings.Split("库表键值存读写查删改日月年人事物", "")
	chineseFill  = []string{"的", "了", "在", "是", "和", "把", "请", "我们", "已经", "需要", "可以", "正在"}
	chineseEnd   = []string{"。", "，", "？", "！", "；"}

	japanese = Zipf(strings.Fields(`
データベース 移行 サーバー 設定 ファイル エラー ログ テスト 東京 天気 明日 バージョン
更新 ユーザー セッション 検索 インデックス コンテナ イメージ クラスタ ネットワーク
証明書 キャッシュ メモリ プロセス タスク キュー 応答 タイムアウト 再試行 ロールバック
バックアップ 権限 トークン モデル コード ブランチ 環境 変数 会議 資料 翻訳 日本語
全文 解析 結果 性能 最適化 監視 障害 対応 項目`), 0.9)
	japaneseParticles = []string{"は", "が", "を", "に", "で", "の", "と", "も", "から", "まで"}
	japaneseEnd       = []string{"です。", "ます。", "しました。", "してください。", "ですか？", "でした。"}

	korean = Zipf(strings.Fields(`
서울 날씨 알려줘 데이터베이스 마이그레이션 서버 설정 파일 오류 로그 테스트 버전
업데이트 사용자 세션 검색 인덱스 컨테이너 이미지 클러스터 네트워크 인증서 캐시
메모리 프로세스 작업 대기열 응답 시간초과 재시도 롤백 백업 권한 토큰 모델 코드
배포 환경 변수 회의 자료 번역 한국어 결과 성능 최적화 모니터링 장애 내일 오늘 확인
부탁 해주세요 했습니다 입니다 있습니다 없습니다`), 0.9)

	// Tools, Sources and Models are the tool names, session sources and
	// models agents use, with their relative frequencies; ShellCommands are
	// the terminal tool's commands. The search benchmark draws from them too.
	Tools = Weighted{
		words: []string{"terminal", "read_file", "write_file", "search_files", "patch", "web_search",
			"browser_navigate", "execute_code", "session_search", "memory", "delegate_task"},
		cum: cumulative([]float64{30, 18, 8, 12, 10, 6, 3, 6, 3, 3, 1}),
	}
	Sources = Weighted{
		words: []string{"cli", "telegram", "discord", "slack", "whatsapp", "api_server"},
		cum:   cumulative([]float64{45, 25, 12, 8, 5, 5}),
	}
	Models = Weighted{
		words: []string{"anthropic/claude-sonnet-4", "openai/gpt-5", "google/gemini-2.5-pro",
			"nousresearch/hermes-4-405b", "qwen/qwen3-coder"},
		cum: cumulative([]float64{35, 30, 15, 12, 8}),
	}
	ShellCommands = []string{"docker ps -a", "kubectl get pods -n staging", "git status", "go test ./...",
		"pytest -q tests/", "journalctl -u hermes --since today", "helm upgrade --install api ./chart",
		"sqlite3 state.db '.schema'", "df -h", "curl -sS localhost:8080/health", "make build"}
	// Tool rounds per turn: 0, 1, 2, 3, 4 or 6 with these weights.
	rounds       = []int{0, 1, 2, 3, 4, 6}
	roundWeights = cumulative([]float64{25, 30, 20, 12, 8, 5})
)

// Weighted draws words with relative weights.
type Weighted struct {
	words []string
	cum   []float64 // running sum of the weights
}

func cumulative(w []float64) []float64 {
	out := make([]float64, len(w))
	sum := 0.0
	for i, x := range w {
		sum += x
		out[i] = sum
	}
	return out
}

// Zipf weights words by 1/rank^s.
func Zipf(words []string, s float64) Weighted {
	w := make([]float64, len(words))
	for i := range w {
		w[i] = 1 / math.Pow(float64(i+1), s)
	}
	return Weighted{words: words, cum: cumulative(w)}
}

// Pick draws one word.
func (w Weighted) Pick(r *rand.Rand) string { return w.words[pickIndex(r, w.cum)] }

// pickIndex draws an index with the weights whose running sum is cum.
func pickIndex(r *rand.Rand, cum []float64) int {
	x := r.Float64() * cum[len(cum)-1]
	return min(sort.SearchFloat64s(cum, x), len(cum)-1)
}

// ---- text ----

type gen struct{ r *rand.Rand }

func (g gen) choice(list []string) string { return list[g.r.IntN(len(list))] }

// between returns an int in [lo, hi].
func (g gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

// length draws a lognormal count clamped to [lo, hi].
func (g gen) length(mu, sigma float64, lo, hi int) int {
	return max(lo, min(hi, int(math.Exp(g.r.NormFloat64()*sigma+mu))))
}

// lang is a turn language: Chinese 10%, Japanese 6%, Korean 4%, else
// English. Tool output is mostly English, so about 15% of all messages end
// up holding CJK text.
func (g gen) lang() string {
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

// english is n words of technical English in sentences of 6–18 words, with
// bigrams, hyphenated terms and identifiers mixed in.
func (g gen) english(n int) string {
	var sb strings.Builder
	for i := 0; i < n; {
		k := min(n-i, g.between(6, 18))
		for j := range k {
			var w string
			switch x := g.r.Float64(); {
			case x < 0.03:
				w = g.choice(bigrams)
			case x < 0.04:
				w = g.choice(hyphenated)
			case x < 0.055:
				w = g.choice(idents)
			default:
				w = english.Pick(g.r)
			}
			if j == 0 {
				if sb.Len() > 0 {
					sb.WriteByte(' ')
				}
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				sb.WriteByte(' ')
			}
			sb.WriteString(w)
		}
		sb.WriteString(g.choice([]string{".", ".", ".", "?", "!", ":"}))
		i += k
	}
	return sb.String()
}

func (g gen) chinese(n int) string {
	var sb strings.Builder
	for range n {
		switch x := g.r.Float64(); {
		case x < 0.08:
			sb.WriteString(g.choice(chineseChars))
		case x < 0.3:
			sb.WriteString(g.choice(chineseFill))
		default:
			sb.WriteString(chinese.Pick(g.r))
		}
		if g.r.Float64() < 0.12 {
			sb.WriteString(g.choice(chineseEnd))
		}
	}
	sb.WriteString("。")
	return sb.String()
}

func (g gen) japanese(n int) string {
	var sb strings.Builder
	for range n {
		sb.WriteString(japanese.Pick(g.r))
		if g.r.Float64() < 0.8 {
			sb.WriteString(g.choice(japaneseParticles))
		} else {
			sb.WriteString("、")
		}
		if g.r.Float64() < 0.1 {
			sb.WriteString(g.choice(japaneseEnd))
		}
	}
	sb.WriteString(g.choice(japaneseEnd))
	return sb.String()
}

func (g gen) korean(n int) string {
	var sb strings.Builder
	for i := 0; i < n; {
		k := min(n-i, g.between(3, 8))
		for j := range k {
			if sb.Len() > 0 || j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(korean.Pick(g.r))
		}
		sb.WriteString(g.choice([]string{".", ".", "?"}))
		i += k
	}
	return sb.String()
}

// prose is text in lang of lognormal length (mu, sigma in log-words,
// clamped to [lo, hi] words). A quarter of CJK texts end in English; 2% of
// English texts embed one CJK word.
func (g gen) prose(mu, sigma float64, lo, hi int, lang string) string {
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
		if g.r.Float64() < 0.02 {
			words := strings.Split(s, " ")
			at := g.r.IntN(len(words) + 1)
			cjk := g.choice([]string{"部署", "项目", "数据库", "日志", "東京", "설정"})
			s = strings.Join(append(words[:at:at], append([]string{cjk}, words[at:]...)...), " ")
		}
	}
	if lang != "en" && g.r.Float64() < 0.25 {
		s += " " + g.english(g.between(3, 12))
	}
	return s
}

// ---- messages ----

// toolCall is one entry of an assistant message's tool_calls, in the
// OpenAI format Hermes stores: arguments are a JSON-encoded string.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// jsonText marshals v without HTML escaping, as Python's json.dumps does.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only maps, slices and strings are encoded here
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (g gen) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = english.Pick(g.r)
	}
	return strings.Join(w, " ")
}

func (g gen) toolArgs(name string) map[string]any {
	switch name {
	case "terminal":
		return map[string]any{"command": g.choice(ShellCommands), "timeout": []int{30, 60, 120, 300}[g.r.IntN(4)]}
	case "read_file", "write_file", "patch":
		a := map[string]any{"path": "src/" + english.Pick(g.r) + g.choice([]string{".go", ".py", ".ts", ".md"})}
		if g.r.Float64() < 0.5 {
			a["path"] = g.choice(idents[:6])
		}
		switch name {
		case "write_file":
			a["content"] = g.words(g.between(10, 60))
		case "patch":
			a["old_string"], a["new_string"] = g.words(g.between(2, 8)), g.words(g.between(2, 8))
		}
		return a
	case "search_files":
		return map[string]any{"pattern": english.Pick(g.r), "path": "."}
	case "web_search":
		return map[string]any{"query": g.words(g.between(2, 6))}
	case "browser_navigate":
		return map[string]any{"url": "https://example.com/" + english.Pick(g.r)}
	case "execute_code":
		return map[string]any{"code": fmt.Sprintf("print(%q)", g.words(g.between(2, 6)))}
	case "session_search":
		return map[string]any{"query": english.Pick(g.r)}
	case "memory":
		return map[string]any{"action": "add", "content": g.words(g.between(5, 20))}
	}
	return map[string]any{"goal": g.words(g.between(5, 15))}
}

// toolResult is the JSON-encoded text a tool returns.
func (g gen) toolResult(name, lang string) string {
	if g.r.Float64() >= 0.4 {
		lang = "en" // tool output is mostly English whatever the chat language
	}
	switch name {
	case "terminal":
		lines := make([]string, g.between(1, 12))
		for i := range lines {
			lines[i] = g.english(g.between(4, 14))
		}
		return jsonText(map[string]any{"output": strings.Join(lines, "\n"), "exit_code": []int{0, 0, 0, 0, 1, 2, 127}[g.r.IntN(7)], "error": nil})
	case "read_file", "search_files":
		return jsonText(map[string]any{"content": g.prose(4.8, 0.9, 10, 1200, lang), "total_lines": g.between(5, 2000)})
	case "web_search", "browser_navigate":
		res := make([]map[string]any, g.between(1, 5))
		for i := range res {
			res[i] = map[string]any{"title": g.english(g.between(3, 8)), "url": fmt.Sprintf("https://example.com/%d", g.r.IntN(99999)),
				"snippet": g.prose(3.2, 0.5, 8, 60, lang)}
		}
		return jsonText(map[string]any{"success": true, "results": res})
	}
	if g.r.Float64() < 0.05 {
		return jsonText(map[string]any{"error": "Error: " + g.english(g.between(5, 20))})
	}
	return jsonText(map[string]any{"success": true, "result": g.prose(3, 0.8, 3, 120, lang)})
}

func (g gen) reasoning(mu float64, hi int, lang string) *string {
	if g.r.Float64() >= 0.3 {
		lang = "en"
	}
	s := g.prose(mu, 0.7, 5, hi, lang)
	return &s
}

func (g gen) tokens(lo, hi int) *int64 {
	n := int64(g.between(lo, hi))
	return &n
}

func (g gen) turn(sessionID, lang string) []sessiondb.NewMessage {
	out := []sessiondb.NewMessage{{SessionID: sessionID, Role: sessiondb.RoleUser, Content: g.prose(2.6, 0.9, 1, 250, lang)}}
	for range rounds[pickIndex(g.r, roundWeights)] {
		calls := make([]toolCall, 1+min(2, int(g.r.ExpFloat64()*0.6)))
		for i := range calls {
			calls[i].ID = fmt.Sprintf("call_%08x", g.r.Uint32())
			calls[i].Type = "function"
			calls[i].Function.Name = Tools.Pick(g.r)
			calls[i].Function.Arguments = jsonText(g.toolArgs(calls[i].Function.Name))
		}
		m := sessiondb.NewMessage{SessionID: sessionID, Role: sessiondb.RoleAssistant, Content: "",
			ToolCalls: json.RawMessage(jsonText(calls)), FinishReason: "tool_calls", TokenCount: g.tokens(20, 400)}
		if g.r.Float64() < 0.35 {
			m.Content = g.prose(2.5, 0.7, 3, 60, lang)
		}
		if g.r.Float64() < 0.6 {
			m.Reasoning = g.reasoning(3.3, 200, lang)
		}
		out = append(out, m)
		for _, c := range calls {
			out = append(out, sessiondb.NewMessage{SessionID: sessionID, Role: sessiondb.RoleTool,
				Content: g.toolResult(c.Function.Name, lang), ToolName: c.Function.Name, ToolCallID: c.ID})
		}
	}
	final := sessiondb.NewMessage{SessionID: sessionID, Role: sessiondb.RoleAssistant,
		Content: g.prose(3.8, 0.9, 2, 700, lang), FinishReason: "stop", TokenCount: g.tokens(30, 1500)}
	if g.r.Float64() < 0.5 {
		final.Reasoning = g.reasoning(3.5, 300, lang)
	}
	return append(out, final)
}
