#!/usr/bin/env bash
# claude-code-router, pinned, from npm into benches/peers/ccr/env.
# 2.0.0 runs on Node 20 as is; 3.x needs Node 22 and packages the registry does not carry.
set -euo pipefail
cd "$(dirname "$0")"

CCR_VERSION=2.0.0
PACKAGE=@musistudio/claude-code-router

if [ "$(node -p "require('./env/node_modules/$PACKAGE/package.json').version" 2>/dev/null)" = "$CCR_VERSION" ]; then
    echo "$PACKAGE $CCR_VERSION already installed in $PWD/env"
    exit 0
fi
mkdir -p env
npm install --prefix env --no-audit --no-fund --save-exact --loglevel=error "$PACKAGE@$CCR_VERSION"
node -p "'$PACKAGE ' + require('./env/node_modules/$PACKAGE/package.json').version"
