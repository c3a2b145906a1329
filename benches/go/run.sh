#!/usr/bin/env bash
# Runs the Go comparison programs (W1-W14) with 2 Ps, as the goro benches do.
# Usage: benches/go/run.sh [-runs N]; GO=/path/to/go picks the toolchain.
set -euo pipefail
cd "$(dirname "$0")"
export GOMAXPROCS=2
for w in w*_*/; do
	"${GO:-go}" run "./$w" "$@"
done
