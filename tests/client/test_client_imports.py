"""The client stays light: importing it never loads the daemon or its heavy dependencies."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = [
    "memoryd",
    "watchfiles",
    "sqlite_vec",
    "apsw",
    "croniter",
    "structlog",
    "openai",
    "onnxruntime",
    "numpy",
]


def loaded_after(statement: str, *, top_level: bool = True) -> set[str]:
    """Module names (top-level ones, or all) in sys.modules after running ``statement`` in a
    fresh Python."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    names = json.loads(proc.stdout.splitlines()[-1])
    return {name.split(".")[0] for name in names} if top_level else set(names)


def test_importing_the_client_and_memctl_loads_nothing_heavy() -> None:
    loaded = loaded_after("import memoryd_client, memoryd_client.cli")
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert "msgpack" in loaded  # the check itself sees third-party imports


def test_using_every_public_name_loads_nothing_heavy() -> None:
    loaded = loaded_after(
        "import memoryd_client as m\n"
        "[getattr(m, name) for name in m.__all__]\n"
        "import memoryd_client.cli._doctor, memoryd_client._autostart"
    )
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_memctl_does_not_pay_for_asyncio() -> None:
    # AsyncMemoryClient is loaded on first use; the blocking client and memctl skip it.
    loaded = loaded_after("import memoryd_client.cli")
    assert "asyncio" not in loaded
    assert "asyncio" in loaded_after("from memoryd_client import AsyncMemoryClient")


# What the daemon loads only when a feature needs it: the OpenAI client (~20 MB with httpx
# and pydantic) for an LLM or the openai provider, the model runtime for the local provider,
# and the tokenizer for chunking a changed file. The scheduled jobs are imported on their
# first run, which a daemon without an LLM also reaches (every 15 minutes).
ON_DEMAND = ["openai", "httpx", "pydantic", "onnxruntime", "tokenizers"]


def test_the_daemon_and_its_jobs_load_on_demand_parts_only_when_used() -> None:
    loaded = loaded_after(
        "import memoryd.app, memoryd.cli\n"
        "import memoryd.jobs.fallback_summary, memoryd.jobs.hippocampus, memoryd.jobs.retention"
    )
    assert loaded.isdisjoint(ON_DEMAND), sorted(loaded & set(ON_DEMAND))
    assert "apsw" in loaded  # the check itself sees the daemon's own imports
    with_llm = loaded_after(
        "from memoryd.runtime.config import LlmConfig\n"
        "from memoryd.jobs.llm import LlmClient\n"
        "LlmClient(LlmConfig(base_url='http://127.0.0.1:9', model='m'), {})"
    )
    assert "openai" in with_llm


def test_memctl_does_not_pay_for_json_until_it_prints_some() -> None:
    # Most human commands never print JSON: `--json`, progress lines and errors import it.
    code = "import memoryd_client.cli, sys; print('json' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == "False"


HEAVY_MCP = {"mcp", "pydantic", "starlette", "anyio", "uvicorn", "httpx", "jsonschema"}


def test_memctl_mcp_serves_stdio_without_the_sdk_or_pydantic() -> None:
    # The agent commands are registered in memctl's parser; `memctl mcp` over stdio speaks
    # the protocol itself (issue 28: importing the SDK was ~1 s of every agent's start).
    light = loaded_after(
        "import memoryd_client.cli as c\n"
        "c.build_parser().parse_args(['search', 'x'])\n"
        "import memoryd_client.cli._agents, memoryd_client.agents.bridge"
    )
    assert light.isdisjoint(HEAVY_MCP), sorted(light & HEAVY_MCP)
    stdio = loaded_after("import memoryd_client.agents.mcp_server")
    assert stdio.isdisjoint(HEAVY_MCP), sorted(stdio & HEAVY_MCP)


def test_memctl_hook_loads_neither_memctls_parser_nor_asyncio() -> None:
    # `memctl hook` runs before every prompt a person types: the lean path.
    loaded = loaded_after(
        "from memoryd_client._memctl import main\nimport memoryd_client.agents.hooks",
        top_level=False,
    )
    names = {"asyncio", "memoryd_client.cli", "memoryd_client._parser", "memoryd_client._async"}
    assert loaded.isdisjoint(names), sorted(loaded & names)


def test_the_daemon_loads_no_model_runtime_or_numpy_before_its_socket_listens() -> None:
    # What `memoryd run` imports before startup() binds: the indexes load numpy after.
    loaded = loaded_after("import memoryd.cli, memoryd.app, memoryd.runtime.config")
    heavy = {"numpy", "onnxruntime", "openai", "tokenizers", "croniter", "watchfiles"}
    assert loaded.isdisjoint(heavy), sorted(loaded & heavy)


def test_finding_the_socket_in_the_session_runtime_dir_does_not_load_platformdirs(
    tmp_path,  # type: ignore[no-untyped-def]
) -> None:
    # platformdirs brings tempfile, random and shutil: a fifth of memctl's own start.
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    statement = (
        "import os\n"
        "os.environ.pop('MEMORYD_HOME', None); os.environ.pop('MEMORYD_SOCKET', None)\n"
        f"os.environ['XDG_RUNTIME_DIR'] = {str(runtime)!r}\n"
        "from memoryd_client.paths import socket_path\n"
        f"assert str(socket_path()) == {str(runtime / 'memoryd' / 'memoryd.sock')!r}"
    )
    assert "platformdirs" not in loaded_after(statement)
    assert "platformdirs" in loaded_after(
        "from memoryd_client.paths import default_paths\ndefault_paths({})"
    )
