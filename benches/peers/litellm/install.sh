#!/usr/bin/env bash
# LiteLLM's proxy, pinned, into benches/peers/litellm/env (a venv of its own).
#
# litellm[proxy] cannot be installed as such: that extra pins packages the index does not
# carry (litellm-proxy, litellm-proxy-extras, litellm-enterprise). The proxy code ships in
# the main wheel, so this installs litellm plus every other requirement of its "proxy"
# extra, read from the installed wheel's own metadata (fixed by the pin).
set -euo pipefail
cd "$(dirname "$0")"

LITELLM_VERSION=1.110.2
PYTHON=${PYTHON:-python3}
NOT_ON_INDEX='^(litellm-proxy|litellm-proxy-extras|litellm-enterprise)$'

if [ "$(env/bin/python -c 'import importlib.metadata as m; print(m.version("litellm"))' 2>/dev/null)" = "$LITELLM_VERSION" ] &&
    [ -f env/.proxy-extras-installed ]; then
    echo "litellm $LITELLM_VERSION already installed in $PWD/env"
    exit 0
fi
rm -rf env
"$PYTHON" -m venv env
env/bin/python -m pip install --quiet --upgrade pip
env/bin/python -m pip install --quiet "litellm==$LITELLM_VERSION"
env/bin/python - "$NOT_ON_INDEX" > env/proxy-requirements.txt <<'PY'
import importlib.metadata as md
import re
import sys

from packaging.requirements import Requirement

skip = re.compile(sys.argv[1])
for spec in md.requires("litellm") or []:
    req = Requirement(spec)
    if req.marker is None or not req.marker.evaluate({"extra": "proxy"}):
        continue
    if req.marker.evaluate({"extra": ""}):  # a base requirement, already installed
        continue
    if skip.match(req.name):
        print(f"# skipped (not on the index): {req}", file=sys.stderr)
        continue
    req.marker = None
    print(req)
PY
echo "== litellm proxy extras:"
cat env/proxy-requirements.txt
env/bin/python -m pip install --quiet -r env/proxy-requirements.txt "litellm==$LITELLM_VERSION"
env/bin/python -m pip freeze > env/freeze.txt
touch env/.proxy-extras-installed
env/bin/litellm --version 2>/dev/null || env/bin/python -c 'import importlib.metadata as m; print("litellm", m.version("litellm"))'
