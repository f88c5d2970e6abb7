#!/usr/bin/env bash
# Install every peer of the load benchmark; a peer that fails is reported, not fatal.
cd "$(dirname "$0")"
status=0
for peer in litellm ccr; do
    echo "== $peer"
    if ! bash "$peer/install.sh" > "$peer/install.log" 2>&1; then
        echo "$peer: install FAILED (see $PWD/$peer/install.log)"
        status=1
    fi
    tail -n 3 "$peer/install.log"
done
exit $status
