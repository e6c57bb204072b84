#!/usr/bin/env bash
# Looks at the Explorer in a real browser: starts `model explore`, walks a first election through
# the Explorer's JSON API (server 0 times out, then messages are delivered until it leads), loads
# that path in headless Chromium (Debian's `chromium` package), checks that the rendered page shows
# the states in story form (roles, `[LC@1 KV@1 V{0,1,2}@1]` logs, messages in flight) and the
# sequence diagram, and writes a screenshot. Then it hunts a bug (`check --bug swap-voter --harm`),
# starts the Explorer with the command that check prints, and checks that the counterexample's
# explorer path opens there on the same actions (second screenshot). Needs chromium, curl and
# python3; not run by CI.
#
#   model/scripts/explorer-check.sh [OUT_DIR]      (default target/explorer-check)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-target/explorer-check}
port=${PORT:-3917}
mkdir -p "$out"
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
    echo "chromium not found (apt-get install chromium)" >&2
    exit 2
fi
cargo build --release -q -p model
target/release/model explore --port "$port" >"$out/explore.log" 2>&1 &
server=$!
server2=
trap 'kill "$server" $server2 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    curl -sf "http://127.0.0.1:$port/.status" >/dev/null && break
    sleep 0.2
done

# Walk: election timeout of server 0, then deliveries, until server 0 is Leader.
path=$(python3 - "$port" <<'PY'
import json, sys, urllib.request
port = sys.argv[1]
def steps(path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/.states{path}") as r:
        return json.load(r)
path, nxt = "/0", None
for _ in range(12):
    nxt = steps(path)
    # Deliver whatever is in flight first; with nothing in flight, time server 0 out.
    pick = next((i for i, s in enumerate(nxt) if s["action"].startswith("deliver")), None)
    if pick is None:
        pick = next(i for i, s in enumerate(nxt) if s["action"] == "server 0: election timeout")
    path += f"/{pick}"
    if "0: Leader" in nxt[pick]["state"]:
        break
print(path)
PY
)
url="http://127.0.0.1:$port/#/steps$path"
echo "path: $url"
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000)
"$chrome" "${flags[@]}" --dump-dom "$url" >"$out/explorer.html" 2>"$out/chromium.log"
"$chrome" "${flags[@]}" --window-size=1400,2000 --screenshot="$out/explorer.png" "$url" \
    >>"$out/chromium.log" 2>&1
fail=0
for want in "0: Leader(leader 0) epoch 1" "log [LC@1 KV@1 V{0,1,2}@1]" "latest {0,1,2}" "in flight:" \
    "server 0: election timeout" "<svg"; do
    if grep -qF "$want" "$out/explorer.html"; then
        echo "ok: page shows '$want'"
    else
        echo "MISSING: '$want'"
        fail=1
    fi
done
for unwanted in "len: 0" "Data {" "bootstrap: 7"; do
    if grep -qF "$unwanted" "$out/explorer.html"; then
        echo "RAW STATE on the page: '$unwanted'"
        fail=1
    fi
done
echo "screenshot: $out/explorer.png"

# A counterexample opens in the Explorer that `check` names, on the same actions.
port2=$((port + 1))
status=0
target/release/model check --bug swap-voter --harm >"$out/check.txt" || status=$?
if [ "$status" -ne 1 ]; then
    echo "MISSING: check --bug swap-voter --harm should exit 1, got $status"
    exit 1
fi
read -ra cmd < <(sed -n 's/^explorer: model //p' "$out/check.txt")
cpath=$(grep -o '#/steps/[0-9/]*' "$out/check.txt" | head -1)
target/release/model "${cmd[@]}" --port "$port2" >"$out/explore-as-check.log" 2>&1 &
server2=$!
for _ in $(seq 1 50); do
    curl -sf "http://127.0.0.1:$port2/.status" >/dev/null && break
    sleep 0.2
done
"$chrome" "${flags[@]}" --dump-dom "http://127.0.0.1:$port2/$cpath" >"$out/counterexample.html" \
    2>>"$out/chromium.log"
"$chrome" "${flags[@]}" --window-size=1400,2000 --screenshot="$out/counterexample.png" \
    "http://127.0.0.1:$port2/$cpath" >>"$out/chromium.log" 2>&1
# The story's numbered actions, in order, in the page's "Path of Actions".
python3 - "$out/check.txt" "$out/counterexample.html" <<'PY' || fail=1
import html, re, sys
story = open(sys.argv[1]).read()
actions = re.findall(r"^  \d+\. (?!initial state)(.*)$", story, re.M)
page = html.unescape(re.sub(r"<[^>]+>", "\n", open(sys.argv[2]).read()))
lines = [l.strip() for l in page.splitlines() if l.strip()]
try:
    path = lines[lines.index("Path of Actions") + 1 : lines.index("Next Action Choices")]
except ValueError:
    path = []
shown = [l for l in path if l != "Pre-init" and not l.startswith("Init ")]
if not actions or shown != actions:
    print(f"MISSING: counterexample path; story {actions}, page {shown}")
    sys.exit(1)
print(f"ok: counterexample path opens ({len(actions)} actions, {sys.argv[2]})")
PY
echo "screenshot: $out/counterexample.png"
exit $fail
