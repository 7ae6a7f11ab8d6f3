"""Every install line of the README, of Getting started (``docs/index.md``), of the store and
running pages and of the plugins' READMEs, run as written in a fresh clone of this checkout
(cloned as ``.ci/run`` clones it), each checked for what it promises; and the commands the demo
prints, run as printed.

Nothing here reaches a package index: uv runs with ``UV_OFFLINE=1`` against its cache (which
CI's own ``uv sync --frozen`` fills: the extras' packages are in the development group too) and
pip with ``PIP_NO_INDEX=1`` (so a test first puts the wheel's dependencies in place with uv,
offline, and pip finds them satisfied). The lines run in order on one worker, sharing one clone;
each ``uv sync`` makes ``.venv`` what its options name, so no test leans on another's state.
The README's test command is not run here (it would run this suite again): its check is that
``.ci/run`` runs it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from turnwire.demo import DemoServer

REPO = Path(__file__).resolve().parents[1]
VERSION = "0.1.0"
WHEEL = f"dist/turnwire-{VERSION}-py3-none-any.whl"
REDACT_WHEEL = f"dist/turnwire_redact-{VERSION}-py3-none-any.whl"
PLUGINS = {
    "turnwire-redact": "redact",
    "turnwire-local-tools": "local_tools",
    "turnwire-markdown-context": "markdown_context",
}
DEV_ONLY = ("pytest", "hypothesis", "ruff", "mypy", "mkdocs", "respx", "openai")

_UV = "python3 -m pip install uv && UV_PYTHON_DOWNLOADS=never UV_COMPILE_BYTECODE=1 uv"
DEMO = f"{_UV} run --no-dev turnwire demo"
TESTS = f"{_UV} sync && uv run pytest"
# Every install line the pages may show, each run (and checked) by one test below.
KNOWN = {
    DEMO,
    TESTS,
    "uv sync",
    "uv sync --no-dev",
    "uv sync --extra postgres",
    "uv sync --extra otel",
    "uv sync --all-packages",
    "uv sync --all-packages --extra postgres",
    *(f"uv sync --package {name}" for name in PLUGINS),
    *(f"uv run --with ./plugins/{name} turnwire plugins" for name in PLUGINS),
    "uv build",
    "uv build --all-packages",
    f"pip install {WHEEL}",
    f"pip install '{WHEEL}[postgres]'",
    f"pip install {WHEEL} {REDACT_WHEEL}",
}
# Spans of prose that name a command without being one to run as it stands.
MENTIONS = {"uv sync", "uv pip install ./plugins/..."}
PAGES = (
    "README.md",
    "docs/index.md",
    "docs/store.md",
    "docs/running.md",
    *(f"plugins/{name}/README.md" for name in PLUGINS),
)
_INSTALL = re.compile(
    r"\b(uv sync|uv build|uv pip install|pip install|uv run --with|uv run --no-dev)\b"
)

# One worker clones once and runs the lines in order.
pytestmark = pytest.mark.xdist_group("install_lines")


def _documented() -> dict[str, set[str]]:
    """Each install line the pages show (a fenced block's line, or a span of code in prose),
    without its comment, and the pages that show it."""
    found: dict[str, set[str]] = {}
    for page in PAGES:
        fenced = False
        for line in (REPO / page).read_text().splitlines():
            if line.startswith("```"):
                fenced = not fenced
                continue
            spans = [line] if fenced else [m[2] for m in re.finditer(r"(`+)(.+?)\1", line)]
            for span in spans:
                command = re.split(r"\s+#\s", span, maxsplit=1)[0].strip()
                if _INSTALL.search(command):
                    found.setdefault(command, set()).add(page)
    return found


def test_every_install_line_of_the_docs_is_one_these_tests_run():
    documented = _documented()
    unknown = {c: pages for c, pages in documented.items() if c not in KNOWN | MENTIONS}
    assert unknown == {}, "a page shows an install line no test runs"
    assert set(documented) >= KNOWN, KNOWN - set(documented)  # no test of a line gone
    assert not any("turnwire[" in command for command in documented)  # on no package index
    # The demo line opens the README and Getting started alike.
    assert documented[DEMO] == {"README.md", "docs/index.md"}


def test_the_readme_test_line_is_what_ci_runs():
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    # .ci/run installs uv itself (quietly), never downloads a Python, then syncs and tests.
    assert "python3 -m pip install --quiet uv" in ci and "export UV_PYTHON_DOWNLOADS=never" in ci
    assert "export UV_COMPILE_BYTECODE=1" in ci  # as the README's commands compile it
    assert any(line.startswith("uv sync --frozen") for line in ci)
    assert TESTS.rsplit("&& ", 1)[1] in ci


# ------------------------------------------------------------------------------ the clone


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of the checkout, as .ci/run makes one, holding the checkout's uncommitted
    changes too (none in CI, which tests a commit) so that a run before a commit tests them."""
    root = tmp_path_factory.mktemp("install")
    target = root / "turnwire"
    _git("clone", "--quiet", str(REPO), str(target), cwd=root)
    changed = _git("ls-files", "-z", "--modified", "--others", "--exclude-standard", cwd=REPO)
    deleted = set(_git("ls-files", "-z", "--deleted", cwd=REPO).split("\0")) - {""}
    for name in set(changed.split("\0")) - {""} - deleted:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    for name in deleted:
        (target / name).unlink(missing_ok=True)
    if _git("status", "--porcelain", cwd=target):
        _git("add", "--all", "--", ".", cwd=target)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "wip", cwd=target)
    return target


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for the environment's temporary files, and a last resort for ``uv``."""
    root = tmp_path_factory.mktemp("tools")
    (root / "bin").mkdir()
    (root / "tmp").mkdir()
    return root


def _env(tools: Path, *, first: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a person at a shell: not this test's virtual environment, no key,
    and offline (uv reads its cache, pip no index)."""
    ours = str(Path(sys.prefix) / "bin")
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != ours]
    if shutil.which("uv", path=os.pathsep.join(path)) is None:  # uv only in this environment
        link = tools / "bin" / "uv"
        if not link.exists():
            link.symlink_to(shutil.which("uv") or Path(ours) / "uv")
        path.append(str(tools / "bin"))
    if first is not None:
        path.insert(0, str(first))
    env.update(
        PATH=os.pathsep.join(path),
        UV_OFFLINE="1",
        UV_PYTHON_DOWNLOADS="never",
        UV_NO_PROGRESS="1",
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        TMPDIR=str(tools / "tmp"),
        **extra,
    )
    return env


def _sh(
    command: str, cwd: Path, env: dict[str, str], *, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if ok:
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _install(command: str, clone: Path, tools: Path, env: dict[str, str] | None = None) -> str:
    """Run a documented install line as written, in the clone."""
    assert command in KNOWN
    return _sh(command, clone, env or _env(tools)).stdout


def _installed(venv: Path) -> set[str]:
    """The distributions in a virtual environment, by normalised name."""
    code = (
        "import importlib.metadata as m, re\n"
        "print('\\n'.join(re.sub(r'[-_.]+', '-', d.metadata['Name']).lower()"
        " for d in m.distributions()))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(done.stdout.split())


def _plugins(turnwire: Path, env: dict[str, str]) -> set[str]:
    """The plugins ``turnwire plugins`` lists as loaded from entry points."""
    done = subprocess.run(
        [str(turnwire), "plugins"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(re.findall(r"^(\w+)\s+plugin\s", done.stdout, re.M))


# -------------------------------------------------------------- the demo, and what it prints


def test_the_readme_demo_line_installs_the_runtime_only_and_leaves_nothing(clone, tools):
    shutil.rmtree(clone / ".venv", ignore_errors=True)  # as in a fresh clone
    out = _install(DEMO, clone, tools)
    assert "RECORDED" in out and "Right now in Florence" in out and "image of a potato" in out
    assert "in a temporary store, deleted now" in out
    assert "  keep it:  uv run --no-dev turnwire demo --store demo.db" in out.splitlines()
    installed = _installed(clone / ".venv")
    assert "turnwire" in installed and not set(DEV_ONLY) & installed
    assert len(installed) < 30, sorted(installed)  # the runtime's 19 or so, not the dev 72
    assert not [p.name for p in (tools / "tmp").iterdir() if p.name.startswith("turnwire-demo")]
    assert _git("status", "--porcelain", cwd=clone) == ""


def test_the_demo_hints_run_as_printed_from_the_clone(clone, tools):
    env = _env(tools)
    keep = _sh("uv run --no-dev turnwire demo --store demo.db", clone, env).stdout
    hints = dict(re.findall(r"^  (see it|go on):\s+(.*)$", keep, re.M))
    thread_id = re.search(r"Stored thread (thr_\w+) \(4 turns\) in demo.db$", keep, re.M)[1]
    assert keep.splitlines()[-1].strip() == "(needs OPENAI_API_KEY: it asks the real API)"
    assert hints["see it"] == f"uv run --no-dev turnwire threads show {thread_id} --store demo.db"
    shown = _sh(hints["see it"], clone, env).stdout
    assert "Florence" in shown and "potato.png" in shown

    go_on = hints["go on"]
    assert go_on.startswith(f"uv run --no-dev turnwire run --thread {thread_id} --store demo.db ")
    refused = _sh(go_on, clone, env, ok=False)  # no key: one line says so, nothing is sent
    assert refused.returncode == 1 and "set OPENAI_API_KEY" in refused.stderr, refused.stderr
    with DemoServer(pace_s=0) as server:  # with a key, against a server like the real one
        ran = _sh(f"{go_on} --base-url {server.base_url}", clone, _env(tools, OPENAI_API_KEY="x"))
    assert "Right now in Florence" in ran.stdout
    assert len(server.requests) == 2 and server.requests[0]["input"][-1]["role"] == "user"
    (clone / "demo.db").unlink()
    shutil.rmtree(clone / "files")
    assert _git("status", "--porcelain", cwd=clone) == ""


# ------------------------------------------------------------------------- from the clone
# In an order that crosses from the runtime-only environment to the development one once.

PYTHON = (".venv", "bin", "python")


def _imports(clone: Path, module: str) -> None:
    subprocess.run([str(clone.joinpath(*PYTHON)), "-c", f"import {module}"], check=True, timeout=60)


@pytest.mark.parametrize("name", list(PLUGINS))
def test_one_plugin_from_the_clone_with_uv_sync_package(clone, tools, name):
    _install(f"uv sync --package {name}", clone, tools)
    installed = _installed(clone / ".venv")
    assert {name, "turnwire"} <= installed and not set(DEV_ONLY) & installed
    assert _plugins(clone / ".venv" / "bin" / "turnwire", _env(tools)) == {PLUGINS[name]}


def test_uv_sync_no_dev_and_the_extras_alone(clone, tools):
    _install("uv sync --no-dev", clone, tools)
    runtime = _installed(clone / ".venv")
    assert "turnwire" in runtime and not set(DEV_ONLY) & runtime and not set(PLUGINS) & runtime
    assert not {"psycopg", "opentelemetry-api"} & runtime
    # The extras themselves carry their packages (the development tools hold them too).
    _sh("uv sync --no-dev --extra postgres --extra otel", clone, _env(tools))
    _imports(clone, "psycopg_pool")
    _imports(clone, "opentelemetry.trace")
    assert not set(DEV_ONLY) & _installed(clone / ".venv")


def test_uv_sync_installs_the_development_tools(clone, tools):
    _install("uv sync", clone, tools)
    dev = _installed(clone / ".venv")
    assert set(DEV_ONLY) <= dev and not set(PLUGINS) & dev


@pytest.mark.parametrize(
    ("extra", "module"), [("postgres", "psycopg_pool"), ("otel", "opentelemetry.trace")]
)
def test_an_extra_from_the_clone(clone, tools, extra, module):
    _install(f"uv sync --extra {extra}", clone, tools)
    _imports(clone, module)


@pytest.mark.parametrize("name", list(PLUGINS))
def test_one_plugin_tried_with_uv_run_with(clone, tools, name):
    _sh("uv sync", clone, _env(tools))  # .venv without a plugin, whichever test ran before
    listed = _install(f"uv run --with ./plugins/{name} turnwire plugins", clone, tools)
    assert set(re.findall(r"^(\w+)\s+plugin\s", listed, re.M)) == {PLUGINS[name]}
    assert not set(PLUGINS) & _installed(clone / ".venv")  # beside .venv, not in it


def test_the_plugins_from_the_clone_with_all_packages(clone, tools):
    _install("uv sync --all-packages", clone, tools)
    listed = _sh("uv run turnwire plugins", clone, _env(tools)).stdout
    assert set(re.findall(r"^(\w+)\s+plugin\s", listed, re.M)) == set(PLUGINS.values())
    _install("uv sync --all-packages --extra postgres", clone, tools)
    turnwire = clone / ".venv" / "bin" / "turnwire"
    assert _plugins(turnwire, _env(tools)) == set(PLUGINS.values())
    assert {"psycopg", "pytest"} <= _installed(clone / ".venv")
    # What the pages warn of: a plain `uv sync` (the test command's) removes them.
    _install("uv sync", clone, tools)
    assert _plugins(turnwire, _env(tools)) == set()


def test_the_readme_save_example_writes_a_copy_not_a_tracked_file(clone, tools):
    readme = (REPO / "README.md").read_text()
    command = re.search(r"`(cp -r examples (\S+) && uv run turnwire run \S+ [^`]*--save)`", readme)
    assert command, "the README's run --save example starts with a copy"
    with DemoServer(pace_s=0) as server:
        env = _env(tools, OPENAI_API_KEY="x")
        _sh(f"{command[1]} --base-url {server.base_url}", clone, env)
    copy = clone / command[2]
    assert _git("status", "--porcelain", cwd=clone) == f"?? {command[2]}/\n"
    assert len((copy / "weather.yaml").read_text()) > len(
        (clone / "examples/weather.yaml").read_text()
    )
    shutil.rmtree(copy)


# -------------------------------------------------------------------------------- wheels


def test_the_wheel_lines(clone, tools, tmp_path):
    _install("uv build", clone, tools)
    assert (clone / WHEEL).is_file() and (clone / f"dist/turnwire-{VERSION}.tar.gz").is_file()
    with zipfile.ZipFile(clone / WHEEL) as wheel:
        metadata = wheel.read(f"turnwire-{VERSION}.dist-info/METADATA").decode()
    assert "Provides-Extra: postgres" in metadata
    assert re.search(
        r"^Requires-Dist: psycopg\[binary\]>=3\.2; extra == .postgres.$", metadata, re.M
    )

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)  # with pip
    # pip reaches no index here: the wheel's dependencies (with the postgres extra's) go in
    # first, at the locked versions, from uv's cache as CI's `uv sync --frozen` left it.
    locked = "uv sync --frozen --inexact --no-dev --no-install-project --extra postgres"
    _sh(locked, clone, _env(tools, UV_PROJECT_ENVIRONMENT=str(venv)))
    wheel_env = _env(tools, first=venv / "bin")
    assert "turnwire" not in _installed(venv)
    _install(f"pip install {WHEEL}", clone, tools, wheel_env)
    version = _sh("turnwire --version", tmp_path, wheel_env).stdout
    assert VERSION in version
    demo = _sh("turnwire demo", tmp_path, wheel_env).stdout  # the packaged data, the hints
    assert "Right now in Florence" in demo
    assert "  keep it:  turnwire demo --store demo.db" in demo.splitlines()
    _install(f"pip install '{WHEEL}[postgres]'", clone, tools, wheel_env)
    subprocess.run([str(venv / "bin" / "python"), "-c", "import psycopg_pool"], check=True)

    _install("uv build --all-packages", clone, tools)
    assert (clone / REDACT_WHEEL).is_file()
    _install(f"pip install {WHEEL} {REDACT_WHEEL}", clone, tools, wheel_env)
    assert _plugins(venv / "bin" / "turnwire", wheel_env) == {"redact"}
