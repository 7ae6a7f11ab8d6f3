"""Record ``POST /responses`` streams from third-party bridges into tests/data/thirdparty.

Each bridge (litellm's proxy, open-responses-server) runs from its own throwaway virtual
environment outside the repository, on 127.0.0.1, in front of ``chat_backend.py`` (a scripted
chat-completions server, started here in-process). For every scenario the exact request bytes
are POSTed with ``Accept-Encoding: identity`` and the response body is saved exactly as
received (``iter_raw``: no content decoding; only the HTTP chunked framing is removed).

Files written per recording ``<server>_<scenario>``:

- ``.sse``: the response body bytes;
- ``.request.json``: the bytes that were POSTed;
- ``.backend.json``: the chat-completions requests the bridge made to the backend (bodies only).

``manifest.json`` lists every recording (URL path, HTTP status, content type, size, sha256)
and the package versions of each environment. SOURCES.md is written by hand from it.

Run from the repository root (needs ``uv`` and a Python >= 3.12 for open-responses-server)::

    uv run python scripts/record_thirdparty.py --setup          # create the venvs, then record
    uv run python scripts/record_thirdparty.py --server ors     # record one server again

Nothing here runs in CI; the tests only read the recorded files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chat_backend

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "thirdparty"
BACKEND_PORT = 18001

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "strict": False,
}


def _user(text: str, *, typed: bool = True) -> dict[str, Any]:
    item: dict[str, Any] = {"role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"type": "message", **item} if typed else item


def _body(model: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": model,
        "input": items,
        "tools": [WEATHER_TOOL],
        "stream": True,
        "store": False,
    }


PARIS_CALL = {
    "type": "function_call",
    "call_id": "call_weather_paris",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
}
PARIS_RESULT = {
    "type": "function_call_output",
    "call_id": "call_weather_paris",
    "output": "21C and sunny",
}

MODEL = "scripted-chat"

SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "text": [_user("Say hello.")],
    "tool_call": [_user("What's the weather in Paris?")],
    "text_after_tool": [_user("What's the weather in Paris?"), PARIS_CALL, PARIS_RESULT],
    "parallel_tool_calls": [_user("What's the weather in Paris and in Tokyo?")],
}


@dataclass
class Server:
    name: str
    port: int
    path: str  # the Responses endpoint, on 127.0.0.1:port
    health: str
    packages: tuple[str, ...]  # what the venv gets (pinned)
    report: tuple[str, ...]  # the distributions whose versions go into the manifest
    python: str
    extra: dict[str, tuple[str, list[dict[str, Any]]]]  # (model, input) for this server only

    def venv(self, work: Path) -> Path:
        return work / f"{self.name}-venv"


SERVERS = {
    "litellm": Server(
        name="litellm",
        port=18002,
        path="/v1/responses",
        health="/health/liveliness",
        packages=("litellm[proxy]==1.108.7",),
        report=("litellm", "litellm-enterprise", "openai", "fastapi", "uvicorn", "httpx"),
        python=sys.executable,
        extra={},
    ),
    "ors": Server(
        name="ors",
        port=18003,
        path="/responses",
        health="/health",
        # 0.4.3 needs mcp<2: it imports mcp.client.streamable_http.streamablehttp_client,
        # which mcp 2 removed.
        packages=("open-responses-server==0.4.3", "mcp<2"),
        report=("open-responses-server", "mcp", "fastapi", "uvicorn", "httpx", "pydantic"),
        python="python3.12",
        extra={
            # turnwire's own shape: an input message without "type": "message".
            "untyped_message": (MODEL, [_user("What's the weather in Paris?", typed=False)]),
            # open-responses-server rebuilds the call only from a non-standard "name" on
            # the function_call_output; it ignores function_call input items.
            "text_after_tool_named_output": (
                MODEL,
                [
                    _user("What's the weather in Paris?"),
                    PARIS_CALL,
                    {**PARIS_RESULT, "name": "get_weather"},
                ],
            ),
            # A backend that opens the tool-call answer with "content": "".
            "tool_call_empty_content": (
                MODEL + chat_backend.EMPTY_CONTENT_SUFFIX,
                [_user("What's the weather in Paris?")],
            ),
        },
    ),
}


def setup(server: Server, work: Path) -> None:
    venv = server.venv(work)
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run(["uv", "venv", "-q", "-p", server.python, str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    subprocess.run(
        ["uv", "pip", "install", "-q", "-p", python, *server.packages], check=True, env=env
    )


def versions(server: Server, work: Path) -> dict[str, str]:
    python = str(server.venv(work) / "bin" / "python")
    listing = subprocess.run(
        ["uv", "pip", "list", "-p", python, "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = {row["name"].lower(): row["version"] for row in json.loads(listing)}
    found["python"] = subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {name: found[name] for name in (*server.report, "python") if name in found}


def start(server: Server, work: Path, key: str) -> subprocess.Popen[bytes]:
    """The server as a child process on 127.0.0.1, configured by environment only."""
    home = work / server.name
    home.mkdir(parents=True, exist_ok=True)
    base = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
    backend = f"http://127.0.0.1:{BACKEND_PORT}"
    if server.name == "litellm":
        config = home / "config.yaml"
        config.write_text(
            "model_list:\n"
            "  - model_name: scripted-chat\n"
            "    litellm_params:\n"
            "      model: openai/scripted-chat\n"
            f"      api_base: {backend}/v1\n"
            "      api_key: dummy-key\n"
            # An openai/ deployment would call the backend's /v1/responses natively; this
            # makes litellm bridge the Responses request to chat completions.
            "      use_chat_completions_api: true\n"
            "litellm_settings:\n"
            "  telemetry: false\n"
            "  num_retries: 0\n"
            "router_settings:\n"
            "  disable_cooldowns: true\n"
        )
        env = {
            **base,
            "LITELLM_MASTER_KEY": key,
            "LITELLM_TELEMETRY": "False",
            "LITELLM_TELEMETRY_DISABLED": "true",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
            "LITELLM_LOCAL_BLOG_POSTS": "True",
            "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
            "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
            "NO_DOCS": "True",
        }
        argv = [str(server.venv(work) / "bin" / "litellm"), "--config", str(config)]
        argv += ["--host", "127.0.0.1", "--port", str(server.port)]
    else:
        mcp = home / "servers_config.json"
        mcp.write_text('{"mcpServers": {}}\n')
        env = {
            **base,
            "OPENAI_BASE_URL_INTERNAL": backend,
            "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}",
            "OPENAI_API_KEY": "dummy-key",
            "API_ADAPTER_HOST": "127.0.0.1",
            "API_ADAPTER_PORT": str(server.port),
            "MCP_SERVERS_CONFIG_PATH": str(mcp),
        }
        argv = [str(server.venv(work) / "bin" / "otc"), "start"]
    log = (home / "server.log").open("ab")
    process = subprocess.Popen(
        argv, cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(
                f"{server.name} exited with {process.returncode}; see {home}/server.log"
            )
        try:
            if httpx.get(f"http://127.0.0.1:{server.port}{server.health}", timeout=2).is_success:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(1)
    stop(process)
    raise SystemExit(f"{server.name} did not answer on {server.health}; see {home}/server.log")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def record(
    server: Server, backend: chat_backend.Backend, key: str, out: Path
) -> list[dict[str, Any]]:
    rows = []
    for stale in out.glob(f"{server.name}_*"):
        stale.unlink()
    scenarios = {name: (MODEL, items) for name, items in SCENARIOS.items()} | server.extra
    with httpx.Client(timeout=60) as client:
        for scenario, (model, items) in scenarios.items():
            name = f"{server.name}_{scenario}"
            body = (json.dumps(_body(model, items), indent=2) + "\n").encode()
            headers = {
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
                "Accept-Encoding": "identity",
            }
            if server.name == "litellm":
                headers["Authorization"] = f"Bearer {key}"
            backend.seen.clear()
            url = f"http://127.0.0.1:{server.port}{server.path}"
            with client.stream("POST", url, content=body, headers=headers) as response:
                raw = b"".join(response.iter_raw())
            (out / f"{name}.request.json").write_bytes(body)
            (out / f"{name}.sse").write_bytes(raw)
            seen = json.dumps(list(backend.seen), indent=2) + "\n"
            (out / f"{name}.backend.json").write_text(seen)
            rows.append(
                {
                    "file": f"{name}.sse",
                    "server": server.name,
                    "scenario": scenario,
                    "url_path": server.path,
                    "status": response.status_code,
                    "content_type": response.headers.get("content-type"),
                    "content_encoding": response.headers.get("content-encoding"),
                    "bytes": len(raw),
                    "sha256": hashlib.sha256(raw).hexdigest(),
                }
            )
            print(f"{name}: HTTP {response.status_code}, {len(raw)} bytes", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/turnwire-thirdparty"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--server", action="append", choices=sorted(SERVERS))
    parser.add_argument("--setup", action="store_true", help="(re)create the virtual environments")
    args = parser.parse_args()
    names = args.server or sorted(SERVERS)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    key = f"sk-local-{secrets.token_hex(16)}"  # litellm's master key; never written anywhere
    backend = chat_backend.serve(BACKEND_PORT)
    try:
        for name in names:
            server = SERVERS[name]
            if args.setup or not server.venv(args.work).exists():
                setup(server, args.work)
            process = start(server, args.work, key)
            try:
                rows = record(server, backend, key, args.out)
            finally:
                stop(process)
            manifest[name] = {
                "versions": versions(server, args.work),
                "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "recordings": rows,
            }
    finally:
        backend.shutdown()
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
