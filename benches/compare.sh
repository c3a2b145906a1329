#!/usr/bin/env bash
# Side-by-side table of goro, its Rust peers and Go; see compare.py for the details (the Rust rows
# are the criterion benches of the workspace member goro-benches: `cargo bench -p goro-benches`).
exec python3 "$(dirname "$0")/compare.py" "$@"
