#!/bin/bash
# How the sessions here were made: with the vibeteam of commit 09edf47, the last
# whose agent steps kept their task records under the session's tasks["name@address"]
# (go build -o /tmp/vt-old . at that commit; the fake agent built from
# testdata/fakeagent to /tmp/mk/fakeagent), then /tmp/mk/<name> written @BASE@ and
# the fake agent @AGENT@. <name>.show is what that vibeteam's show printed (TZ=UTC).
# Makes sessions with the vibeteam of before agent steps held their task
# records in their runs: question (parked at an agent step's question in a
# loop's iteration 2) and killed (kill -9 in the middle of an agent step).
set -e
VT=${VT:-/tmp/vt-old}
FA=/tmp/mk/fakeagent
mkproj() {
  d=$1; rm -rf $d; mkdir -p $d/.vibeteam/adapters
  cat > $d/.vibeteam/adapters/structured.yaml <<A
name: structured
command: $FA
modes:
  headless:
    args: [record=argv.json]
    output: claude-stream-json
    resume: [--resume, "{session}", cat=continued.jsonl]
    prompt: { position: arg, separator: "--" }
A
}
# --- question
P=/tmp/mk/question; mkproj $P; cd $P
cat > g.yaml <<'G'
name: asks
steps:
  - name: prep
    type: script
    command: echo prep >> prep.t
  - name: work
    type: loop
    max_iterations: 3
    steps:
      - name: impl
        type: agent
        adapter: structured
        spell: |
          cat=run.jsonl
      - name: check
        type: script
        command: if [ -f asked ]; then echo fine; else touch asked; cp ask.jsonl run.jsonl; echo not yet; exit 1; fi
        on_fail: continue
        on_success: exit_loop
  - name: after
    type: script
    command: echo after >> after.t
G
cat > run.jsonl <<'J'
{"type":"system","subtype":"init","session_id":"sess-one"}
{"type":"result","subtype":"success","is_error":false,"result":"Did the first part.\n\n```json\n{\"success\": true, \"summary\": \"first part\"}\n```","session_id":"sess-one","usage":{"input_tokens":100,"output_tokens":10}}
J
cat > ask.jsonl <<'J'
{"type":"system","subtype":"init","session_id":"sess-q"}
{"type":"result","subtype":"success","is_error":false,"result":"Two ways to store it.\n\nWhich database should I use?\n1. Postgres\n2. SQLite","session_id":"sess-q","usage":{"input_tokens":200,"output_tokens":20}}
J
cat > continued.jsonl <<'J'
{"type":"result","subtype":"success","is_error":false,"result":"Used SQLite.\n\n```json\n{\"success\": true, \"summary\": \"used sqlite\"}\n```","session_id":"sess-q","usage":{"input_tokens":300,"output_tokens":30}}
J
set +e; NO_COLOR=1 $VT --base-dir $P run g.yaml > run.out 2> run.err; echo "question: exit $?"; set -e
# --- killed
P=/tmp/mk/killed; mkproj $P; cd $P
cat > g.yaml <<'G'
name: slow
steps:
  - name: prep
    type: script
    command: echo prep >> prep.t
  - name: impl
    type: agent
    adapter: structured
    spell: |
      stamp=impl.t exec=test_-f_go_||_sleep_60 cat=done.jsonl
  - name: after
    type: script
    command: echo after >> after.t
G
cat > done.jsonl <<'J'
{"type":"system","subtype":"init","session_id":"sess-k"}
{"type":"result","subtype":"success","is_error":false,"result":"Done.\n\n```json\n{\"success\": true, \"summary\": \"done\"}\n```","session_id":"sess-k","usage":{"input_tokens":50,"output_tokens":5}}
J
setsid bash -c "NO_COLOR=1 exec $VT --base-dir $P run g.yaml > run.out 2> run.err" &
pid=$!
for i in $(seq 1 200); do [ -f impl.t ] && break; sleep 0.05; done
sleep 0.3
pgid=$(ps -o pgid= $pid | tr -d ' ')
kill -9 -- -$pgid
wait $pid || true
echo killed
