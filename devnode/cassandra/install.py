"""Find Java and put Cassandra's jars in place: the binary tarball, or cassandra-all assembled by Maven."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from devnode.common import LOG_TAIL_LINES, DevNodeError, Progress

CASSANDRA_VERSION = "5.0.9"

_CENTRAL = "https://repo.maven.apache.org/maven2"
_POM_TEMPLATE = Path(__file__).with_name("cassandra-node.pom.xml")
_MVN_TIMEOUT = 1800.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _output_tail(output: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(_ANSI.sub("", output).strip().splitlines()[-lines:])


def _first_error(output: str) -> str:
    """Maven's first [ERROR] line, which names the cause; the rest is generic advice."""
    lines = [line.strip() for line in _ANSI.sub("", output).splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("[ERROR]")]
    return (errors or lines or ["(no output)"])[0]


def _java_major(java: str) -> int | None:
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


def find_java(progress: Progress) -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home) / "bin" / "java" if java_home else None
    java = str(candidate) if candidate is not None and candidate.is_file() else shutil.which("java")
    if java is None:
        raise DevNodeError(
            f"Java 17 is needed to run Cassandra {CASSANDRA_VERSION}, but no `java` was found "
            "on PATH (nor in JAVA_HOME). Install it, e.g. "
            "`apt-get install openjdk-17-jre-headless` "
            "(Debian/Ubuntu) or `brew install openjdk@17` (macOS)."
        )
    major = _java_major(java)
    if major is None:
        raise DevNodeError(f"Could not tell the version of {java} (`{java} -version` failed).")
    if major < 17:
        raise DevNodeError(
            f"{java} is Java {major}; Cassandra {CASSANDRA_VERSION} is run here with Java 17. "
            "Install it, e.g. `apt-get install openjdk-17-jre-headless`, and put it first on "
            "PATH or point JAVA_HOME at it."
        )
    if major > 17:
        progress(
            f"warning: {java} is Java {major}; Cassandra {CASSANDRA_VERSION} supports Java 11 "
            "and 17. Trying anyway; set JAVA_HOME to a Java 17 if it fails."
        )
    return java


class Installer:
    """Populates ``<home>/<version>/lib`` once; renaming a temp dir into place makes it atomic."""

    def __init__(self, home: Path, progress: Progress) -> None:
        self.home = home
        self.install_dir = home / CASSANDRA_VERSION
        self.lib = self.install_dir / "lib"
        self._progress = progress

    def ensure_installed(self) -> None:
        if self.lib.is_dir():
            return
        if self.install_dir.exists():
            shutil.rmtree(self.install_dir)
        for stale in self.home.glob(".download-*"):
            shutil.rmtree(stale, ignore_errors=True)
        mvn = shutil.which("mvn")
        tmp = Path(tempfile.mkdtemp(prefix=".download-", dir=self.home))
        started = time.monotonic()
        try:
            tarball = self._fetch_tarball(mvn, tmp)
            if tarball is not None:
                node_dir = self._unpack(tarball, tmp / "unpacked")
            elif mvn is None:
                raise DevNodeError(
                    f"Maven (`mvn`) is needed to fetch Cassandra {CASSANDRA_VERSION}: its binary "
                    "tarball is not on Maven Central, so the node is assembled from cassandra-all "
                    "and its dependencies. Install it, e.g. `apt-get install maven` "
                    "(Debian/Ubuntu) or `brew install maven` (macOS)."
                )
            else:
                node_dir = self._assemble(mvn, tmp)
            if not any((node_dir / "lib").glob("jamm-*.jar")):
                raise DevNodeError(f"The fetched Cassandra {CASSANDRA_VERSION} has no lib/jamm-*.jar.")
            os.rename(node_dir, self.install_dir)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        jars = len(list(self.lib.glob("*.jar")))
        self._progress(
            f"Cassandra {CASSANDRA_VERSION} installed in {self.install_dir} "
            f"({jars} jars, {time.monotonic() - started:.0f}s)"
        )

    def _fetch_tarball(self, mvn: str | None, tmp: Path) -> Path | None:
        """The binary tarball from Maven Central, or None when Central does not have it."""
        coordinates = f"org.apache.cassandra:apache-cassandra:{CASSANDRA_VERSION}:tar.gz:bin"
        out = tmp / "tarball"
        if mvn is not None:
            self._progress(f"downloading {coordinates} with Maven")
            done = _mvn(
                mvn,
                ["dependency:copy", f"-Dartifact={coordinates}", f"-DoutputDirectory={out}"],
                tmp,
            )
            found = sorted(out.glob("*.tar.gz")) if done.returncode == 0 else []
            if not found and re.search(r"Could not find artifact|was not found in", done.stdout):
                self._progress(f"{coordinates} is not on Maven Central")
            elif not found:
                self._progress(f"Maven could not fetch {coordinates}: {_first_error(done.stdout)}")
            return found[0] if found else None
        name = f"apache-cassandra-{CASSANDRA_VERSION}-bin.tar.gz"
        url = f"{_CENTRAL}/org/apache/cassandra/apache-cassandra/{CASSANDRA_VERSION}/{name}"
        self._progress(f"downloading {url}")
        out.mkdir()
        try:
            with urllib.request.urlopen(url, timeout=60) as response, (out / name).open("wb") as fh:
                shutil.copyfileobj(response, fh, 1 << 20)
        except urllib.error.HTTPError as exc:
            self._progress(f"{url}: HTTP {exc.code}")
            return None
        except (urllib.error.URLError, TimeoutError) as exc:
            self._progress(f"{url}: {exc}")
            return None
        return out / name

    def _unpack(self, tarball: Path, dest: Path) -> Path:
        self._progress(f"unpacking {tarball.name}")
        with tarfile.open(tarball) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(dest, filter="data")
            else:
                archive.extractall(dest)
        tops = [p for p in dest.iterdir() if (p / "lib").is_dir()]
        if len(tops) != 1:
            raise DevNodeError(f"Unexpected layout in {tarball.name}: no single top directory with lib/.")
        return tops[0]

    def _assemble(self, mvn: str, tmp: Path) -> Path:
        self._progress(
            f"assembling Cassandra {CASSANDRA_VERSION} from org.apache.cassandra:cassandra-all and "
            "its runtime dependencies (Maven)"
        )
        pom = tmp / "pom.xml"
        pom.write_text(_POM_TEMPLATE.read_text().replace("@CASSANDRA_VERSION@", CASSANDRA_VERSION))
        node_dir = tmp / "node"
        done = _mvn(
            mvn,
            [
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={node_dir / 'lib'}",
            ],
            tmp,
        )
        if done.returncode != 0 or not (node_dir / "lib").is_dir():
            raise DevNodeError(
                f"Maven could not fetch org.apache.cassandra:cassandra-all:{CASSANDRA_VERSION} "
                f"and its dependencies (exit {done.returncode}). Check network access to "
                f"{_CENTRAL} and ~/.m2/settings.xml. Maven said:\n{_output_tail(done.stdout)}"
            )
        return node_dir


def _mvn(mvn: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [mvn, "-B", "-q", "-Dstyle.color=never", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=_MVN_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise DevNodeError(f"Maven did not finish within {_MVN_TIMEOUT:.0f}s: mvn {' '.join(args)}") from exc
