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

# The browser test drives Debian's chromium (headless) through playwright-core. Where it
# is missing it is installed with apt-get when run as root; otherwise the test says what to install.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing chromium (apt-get) for the GraphiQL browser test" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } \
      || echo "==> could not install chromium; the GraphiQL browser test will fail saying so" >&2
  else
    echo "==> chromium is missing: install Debian's chromium package for the GraphiQL browser test" >&2
  fi
fi
