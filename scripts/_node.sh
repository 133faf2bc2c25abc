# Sourced by scripts/test: installs the Node test project's pinned packages
# (npm ci in tests/js) when node_modules is missing or package-lock.json changed.
# Without npm nothing is installed, and the tests that need Node say so.
if command -v npm >/dev/null 2>&1; then
  js_stamp="tests/js/node_modules/.installed"
  js_want="$(sha256sum tests/js/package-lock.json | cut -d' ' -f1)"
  if [ ! -d tests/js/node_modules ] || [ "$(cat "$js_stamp" 2>/dev/null)" != "$js_want" ]; then
    echo "==> installing tests/js (npm ci, pinned by package-lock.json)" >&2
    (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
    echo "$js_want" > "$js_stamp"
  fi
fi
