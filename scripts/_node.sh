# Sourced by scripts/test: installs the pinned packages of the Node projects
# (npm ci in tests/js, the client tests, and examples/web, the reference web client) when
# node_modules is missing or package-lock.json changed. Without npm nothing is installed, and
# the tests that need Node say so.
if command -v npm >/dev/null 2>&1; then
  for js_dir in tests/js examples/web; do
    js_stamp="$js_dir/node_modules/.installed"
    js_want="$(sha256sum "$js_dir/package-lock.json" | cut -d' ' -f1)"
    if [ ! -d "$js_dir/node_modules" ] || [ "$(cat "$js_stamp" 2>/dev/null)" != "$js_want" ]; then
      echo "==> installing $js_dir (npm ci, pinned by package-lock.json)" >&2
      (cd "$js_dir" && npm ci --no-audit --no-fund --loglevel=error)
      echo "$js_want" > "$js_stamp"
    fi
  done
fi

# The browser tests (GraphiQL, the web client) drive Debian's chromium (headless) through
# playwright-core. Where it is missing it is installed with apt-get when run as root; otherwise
# the tests say what to install.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing chromium (apt-get) for the browser tests" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; } \
      || echo "==> could not install chromium; the browser tests will fail saying so" >&2
  else
    echo "==> chromium is missing: install Debian's chromium package for the browser tests" >&2
  fi
fi
