"""The TypeScript client (``clients/typescript``), generated from the service's OpenAPI
schema: the committed schema is the one ``memory serve`` answers, its generated types
are what openapi-typescript makes of it, and the client's own tests (Node's test runner)
and docs/integrations.md's example run against a real ``memory serve``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from evals.bench.serving import create_key, service_env, start
from retrieval.service import openapi
from tests.conftest import REPO

CLIENT = REPO / "clients" / "typescript"
NODE = REPO / "clients" / "inspector" / "node_modules" / ".bin" / "node"  # Node.js 22 (make node-tools)


def test_the_committed_schema_is_the_one_the_service_serves():
    committed = (CLIENT / "openapi.json").read_text()
    assert committed == openapi.text(), ("clients/typescript/openapi.json is stale: run "
                                         "`python -m retrieval.service.openapi > clients/typescript/openapi.json` "
                                         "and `npm run generate` there")
    schema = json.loads(committed)
    inject = schema["paths"]["/v1/inject"]["post"]["responses"]
    assert inject["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Injected"}
    assert {"401", "403", "429"} <= set(inject)  # refusals are typed too
    untyped = [f"{method.upper()} {path}" for path, methods in schema["paths"].items()
               for method, op in methods.items()
               for content in [op["responses"][min(op["responses"])].get("content", {})]
               if not content or any(body.get("schema", {}) in ({}, {"type": "object"}) for body in content.values())]
    assert untyped == []


def _node(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    if not NODE.exists() or not (CLIENT / "dist" / "index.js").exists():
        pytest.fail("the Node.js tools are not installed or the client is not built: run `make node-tools` (CI does)")
    path = f"{NODE.parent}:{os.environ.get('PATH', '')}"
    return subprocess.run([*args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**service_env(), **(env or {}), "PATH": path})


@pytest.mark.slow
def test_the_generated_types_are_openapi_typescripts_of_the_committed_schema(tmp_path):
    out = tmp_path / "schema.d.ts"
    done = _node(str(CLIENT / "node_modules" / ".bin" / "openapi-typescript"), "openapi.json",
                 "--default-non-nullable", "false", "--output", str(out), cwd=CLIENT)
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (CLIENT / "src" / "schema.d.ts").read_text(), "run `npm run generate`"
    packed = _node("npm", "pack", "--dry-run", "--json", cwd=CLIENT)
    assert packed.returncode == 0, packed.stderr
    files = {f["path"] for f in json.loads(packed.stdout)[0]["files"]}
    assert {"dist/index.js", "dist/index.d.ts", "dist/schema.d.ts", "package.json", "openapi.json"} <= files
    assert not any(f.startswith(("src/", "test/", "node_modules/")) for f in files)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("typescript") / "data"
    keys = {name: create_key(root, agent, "--namespace", name, "--writes-per-minute", "1000")
            for agent, name in (("ts-agent", "aaron"), ("ts-bea", "bea"), ("ts-docs", "carol"))}
    server = start(root, keys["aaron"], workers=1)
    yield f"http://127.0.0.1:{server.port}", keys
    server.stop()


@pytest.mark.slow
def test_the_clients_own_tests_pass_against_a_real_server(served):
    url, keys = served
    done = _node(str(NODE), "--test", *sorted(str(p) for p in (CLIENT / "test").glob("*.test.mjs")), cwd=CLIENT,
                 env={"MEMORY_URL": url, "MEMORY_API_KEY": keys["aaron"], "MEMORY_OTHER_KEY": keys["bea"]})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = re.search(r"^# pass (\d+)$", done.stdout, flags=re.M)
    assert passed and int(passed.group(1)) >= 10 and "# fail 0" in done.stdout, done.stdout[-2000:]


@pytest.mark.slow
def test_the_documented_example_runs(served, tmp_path):
    url, keys = served
    text = (REPO / "docs" / "integrations.md").read_text()
    section = text.split("## TypeScript", 1)[1].split("\n## ", 1)[0]
    (example,) = re.findall(r"```ts\n(.*?)```", section, flags=re.S)
    package = tmp_path / "node_modules" / "@agent-memory"
    package.mkdir(parents=True)
    (package / "client").symlink_to(CLIENT)  # as `npm install ./clients/typescript` links it
    (tmp_path / "example.mts").write_text(example)
    done = _node(str(NODE), "example.mts", cwd=tmp_path, env={"MEMORY_URL": url, "MEMORY_API_KEY": keys["carol"]})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "<memory-context>" and any("11,799 miles" in line and "[pending]" in line for line in lines)
    assert "422 " in done.stdout and re.search(r"^p:\d{6}$", lines[-1])
