#!/bin/bash
# Reference solution: write the oracle tests into the workspace.
set -euo pipefail
mkdir -p "$$(dirname "/workspace/${test_path}")"
cat > "/workspace/${test_path}" <<'R2E_ORACLE_EOF'
${oracle_source}R2E_ORACLE_EOF
