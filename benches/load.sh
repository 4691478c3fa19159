#!/usr/bin/env bash
# Load benchmark (not a test): builds the release binary, starts it on loopback with a fresh SQLite
# database (or DATABASE_URL), and drives it with wrk (Debian package). Prints, from one run:
# requests/s and p50/p99 for GET /api/v1/health (the baseline), demo calculate, and keyed calculate
# with its ledger write, each driven with every connection count of LEVY_BENCH_CONNS (default 16 and
# 64); each endpoint's maximum throughput is its best of those, and its ratio to the baseline is of
# maxima. Then p50/p99 again at about half of each endpoint's maximum throughput, with each connection
# count that can carry it (wrk paced per connection with its delay() hook, pauses of exponential length), LEVY_BENCH_HALF_RUNS times (default
# 3): a p99 from one 10-second run on a shared machine moves by a fifth or more from run to run, so each
# row's half-load figures are the run with the median p99, and every run's p99 is printed beside it.
#
# Limits are raised for the run (LEVY_BURST_LIMIT, LEVY_DEMO_*_LIMIT) so that the limiter's own
# database work is measured without its refusals. Usage: bash benches/load.sh [seconds per run, default 10]
# LEVY_BENCH_ACCOUNTS=N spreads the keyed calls over N accounts (default 1), each request with the next account's
# key: on PostgreSQL the ledger's batches of different accounts run beside each other.
# LEVY_BENCH_RATE=N paces every endpoint at N req/s instead of half of its own maximum: at one rate, what the
# keyed path adds to a call's tail is told apart from what the machine (wrk, the server, the database) gives any call.
# LEVY_BENCH_SCRAPE=1 reads the metrics as Prometheus would while the load runs: /metrics opened by a token
# (LEVY_METRICS_TOKEN) and scraped every second. (The metrics are always counted; this adds their reading.)
set -euo pipefail
cd "$(dirname "$0")/.."
DUR="${1:-10}"
PORT="${LEVY_BENCH_PORT:-18080}"
read -r -a CONN_COUNTS <<<"${LEVY_BENCH_CONNS:-16 64}"
HALF_RUNS="${LEVY_BENCH_HALF_RUNS:-3}"
ACCOUNTS="${LEVY_BENCH_ACCOUNTS:-1}"
RATE="${LEVY_BENCH_RATE:-}"
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
# LEVY_BENCH_BIN measures a binary built beforehand (to alternate two builds); else the release build of this tree.
BIN="${LEVY_BENCH_BIN:-}"
if [ -z "$BIN" ]; then
  cargo build --release --locked --quiet
  BIN="${CARGO_TARGET_DIR:-target}/release/levy"
fi

WORK="$(mktemp -d)"
export LEVY_DATA_DIR="$WORK" LEVY_BURST_LIMIT=1000000000 LEVY_DEMO_MINUTE_LIMIT=1000000000 LEVY_DEMO_DAY_LIMIT=1000000000 RUST_LOG=warn
export LEVY_SIGNUP_HOUR_LIMIT=1000000 LEVY_SIGNUP_DAY_LIMIT=1000000
SCRAPE="${LEVY_BENCH_SCRAPE:-0}"
[ "$SCRAPE" = 1 ] && export LEVY_METRICS_TOKEN=bench-scrape-token
"$BIN" serve --bind "127.0.0.1:$PORT" >"$WORK/server.log" 2>&1 &
PID=$!
SCRAPER=""
trap 'kill $SCRAPER $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do curl -sf "$BASE/api/v1/health" >/dev/null && break; sleep 0.1; done
if [ "$SCRAPE" = 1 ]; then
  while kill -0 "$PID" 2>/dev/null; do
    curl -sf -H "Authorization: Bearer $LEVY_METRICS_TOKEN" "$BASE/metrics" -o "$WORK/metrics.txt" || echo "warning: a scrape failed" >&2
    sleep 1
  done &
  SCRAPER=$!
fi

KEYS=()
for n in $(seq 1 "$ACCOUNTS"); do
  email="bench@example.com"; [ "$n" = 1 ] || email="bench$n@example.com"
  KEYS+=("$(curl -sf "$BASE/api/v1/auth/signup" -H 'Content-Type: application/json' \
    -d '{"email":"'"$email"'","password":"benchmark-password","agent_name":"bench","agent_work_type":"compute"}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"]["key"])')")
done
# The free plan stops at 1,500 calls a month; the keyed run would then measure 429s. Put the bench
# accounts on the pro plan (1,000,000 included) straight in their database.
if [ -n "${DATABASE_URL:-}" ]; then
  psql -q "$DATABASE_URL" -c "UPDATE entities SET plan = 'pro' WHERE email LIKE 'bench%@example.com'"
else
  python3 -c 'import sqlite3,sys; c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE entities SET plan = ?", ("pro",)); c.commit()' "$WORK/levy.db"
fi
for KEY in "${KEYS[@]}"; do
  curl -sf "$BASE/api/v1/nexus" -H "X-API-Key: $KEY" -H 'Content-Type: application/json' -d '{"nexus":{"TX":{"hasNexus":true}}}' >/dev/null
done

BODY='{"amount": 100.5, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "bench-cp", "transaction_type": "saas"}'
script() { # $1 = method, $2 = body, $3 = extra header line (lua), file on stdout
  cat <<LUA
wrk.method = "$1"
wrk.body = [[$2]]
wrk.headers["Content-Type"] = "application/json"
$3
-- Pauses drawn from an exponential distribution of mean PAUSE_MS milliseconds, so that each connection sends
-- as independent callers do (a Poisson process): with one fixed pause, the callers a ledger batch answers
-- together come back together, and the load turns into bursts (benches/README.md, "Pacing"). wrk waits whole
-- milliseconds: each draw is rounded down or up at random, in the proportion that keeps its mean. Each thread
-- seeds its own generator.
local pause = tonumber(os.getenv("PAUSE_MS") or "0")
local threads = 0
function setup(thread) threads = threads + 1; thread:set("seed", threads) end
function init(args) math.randomseed(os.time() * 1000 + (seed or 0)) end
function delay()
  if pause <= 0 then return 0 end
  local d = -pause * math.log(1 - math.random())
  local whole = math.floor(d)
  if math.random() < d - whole then return whole + 1 end
  return whole
end
LUA
}
script GET "" "" >"$WORK/health.lua"
script POST "$BODY" "" >"$WORK/demo.lua"
# Each request carries the next account's key.
script POST "$BODY" "local keys = {$(printf '"%s",' "${KEYS[@]}")}
local sent = 0
function request() sent = sent + 1; wrk.headers[\"X-API-Key\"] = keys[sent % #keys + 1]; return wrk.format() end" >"$WORK/keyed.lua"

# run LUA URL PAUSE CONNECTIONS → "rps p50_ms p99_ms"
run() {
  PAUSE_MS="$3" wrk -t2 -c"$4" -d"${DUR}s" --latency -s "$1" "$2" | python3 -c '
import re, sys
t = sys.stdin.read()
def ms(v, u): return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
p = {k: ms(v, u) for k, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)", t, re.M)}
non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
if non2xx: print(f"warning: {sys.argv[1]}: {non2xx.group(1)} non-2xx responses (the figures include them)", file=sys.stderr)
print("%.0f %.3f %.3f" % (rps, p.get("50", 0), p.get("99", 0)))' "$(basename "$1")"
}

label() { case $1 in health) echo "GET /health (baseline)" ;; demo) echo "POST /calculate demo" ;; keyed) echo "POST /calculate keyed (+ledger)" ;; esac; }
declare -A RPS P50 P99 CONN SAT
SWEEP="" HALF=""
# The columns of the sweep's and the half-load table's rows (label, conns, req/s, p50, p99), headers included.
COLS='%-34s %6s %10s %9s %9s'
for name in health demo keyed; do
  case $name in health) url="$BASE/api/v1/health" ;; *) url="$BASE/api/v1/calculate" ;; esac
  RPS[$name]=0
  for c in "${CONN_COUNTS[@]}"; do
    read -r rps p50 p99 < <(run "$WORK/$name.lua" "$url" 0 "$c")
    SAT[$name,$c]=$rps
    SWEEP+=$(printf "$COLS" "$(label $name)" "$c" "$rps" "$p50" "$p99")$'\n'
    if [ "$rps" -gt "${RPS[$name]}" ]; then RPS[$name]=$rps P50[$name]=$p50 P99[$name]=$p99 CONN[$name]=$c; fi
  done
  # Half the maximum, with each connection count that can carry it (its own maximum at least 5% above half):
  # each connection's cycle (its pause plus the response time) must last conns*1000/(max/2) ms. At the same
  # rate p99 grows with the number of connections, health's as well as the others' (more calls can be waiting
  # at once whenever the server or wrk is held up), so each count gets its own row.
  # Short runs find the pause: each measures the cycle it got and moves the pause by what the cycle lacks or
  # has too much, until the rate is within 5% of half (at most 4 runs). With cycles near a millisecond one
  # correction is not enough.
  target=$(( ${RATE:-0} > 0 ? ${RATE:-0} : RPS[$name] / 2 ))
  for c in "${CONN_COUNTS[@]}"; do
    if (( 100 * SAT[$name,$c] < 105 * target )); then # (its maximum under 1.05 times the rate)
      HALF+=$(printf '%-34s %6s   cannot carry %s req/s (%s req/s at most)' "$(label $name)" "$c" "$target" "${SAT[$name,$c]}")$'\n'
      continue
    fi
    cycle=$(python3 -c "print($c * 1000 / $target)")
    pause=$(python3 -c "print(round($cycle, 3))")
    for _ in 1 2 3 4; do
      read -r rps _ _ < <(DUR=3 run "$WORK/$name.lua" "$url" "$pause" "$c")
      # (Nothing printed: within 5% of half.)
      next=$(python3 -c "
if abs($rps / $target - 1) > 0.05: print(round(max(0.0, $pause + $cycle - $c * 1000 / max($rps, 1)), 3))")
      [ -z "$next" ] && break
      pause=$next
    done
    runs=""
    for _ in $(seq 1 "$HALF_RUNS"); do runs+="$(run "$WORK/$name.lua" "$url" "$pause" "$c")"$'\n'; done
    # The run with the median p99 (sorted by p99; the middle one, the lower middle for an even count).
    read -r hrps hp50 hp99 < <(printf '%s' "$runs" | sort -g -k3 | sed -n "$(( (HALF_RUNS + 1) / 2 ))p")
    all=$(printf '%s' "$runs" | awk '{printf "%s%s", sep, $3; sep=" "}')
    HALF+=$(printf "$COLS   %s" "$(label $name)" "$c" "$hrps" "$hp50" "$hp99" "$all")$'\n'
  done
done

echo
echo "levy load benchmark: $(nproc) cores, ${DUR}s per run, database: ${DATABASE_URL:-sqlite (WAL)}, keyed calls over $ACCOUNTS account(s)"
printf "$COLS\n" "no pauses" conns "req/s" "p50 ms" "p99 ms"
printf '%s' "$SWEEP"
echo
ROW='%-34s %6s %10s %9s %9s %9s\n'
printf "$ROW" "maximum" conns "req/s" "vs base" "p50 ms" "p99 ms"
for name in health demo keyed; do
  ratio=$(python3 -c "print(f'{${RPS[$name]} / ${RPS[health]}:.2f}')")
  printf "$ROW" "$(label $name)" "${CONN[$name]}" "${RPS[$name]}" "$ratio" "${P50[$name]}" "${P99[$name]}"
done
echo
printf "$COLS   %s\n" "at about $( [ -n "$RATE" ] && echo "$RATE req/s" || echo "half of the maximum" )" conns "req/s" "p50 ms" "p99 ms" "p99 of each run"
printf '%s' "$HALF"
echo "goals: demo >= 0.70 of baseline, keyed >= 0.40, p99 < 5 ms at half of maximum throughput"
if [ "$SCRAPE" = 1 ]; then
  echo "metrics scraped every second; the last scrape counted $(awk '/^levy_http_requests_total/ {n += $2} END {print n}' "$WORK/metrics.txt") requests"
fi
