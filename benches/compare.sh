#!/usr/bin/env bash
# Side-by-side table of goro, its Rust peers and Go; see compare.py for the details.
exec python3 "$(dirname "$0")/compare.py" "$@"
