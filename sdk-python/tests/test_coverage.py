"""Every operation of the contract has a method on Engram and AsyncEngram; the generated files are current."""
from __future__ import annotations

import inspect
import json
import subprocess
import sys

import engram
from conftest import ROOT
from engram._operations import OPERATIONS

METHODS = ("get", "post", "put", "patch", "delete")


def test_every_operation_of_the_snapshot_has_a_method() -> None:
    spec = json.loads((ROOT / "test" / "openapi.snapshot.json").read_text("utf-8"))
    ids = {op["operationId"] for item in spec["paths"].values() for m, op in item.items() if m in METHODS}
    assert ids == set(OPERATIONS)
    sync = engram.Engram(api_key="k", base_url="http://unused")
    asynchronous = engram.AsyncEngram(api_key="k", base_url="http://unused")
    missing = []
    for op in OPERATIONS.values():
        for client in (sync, asynchronous):
            method = getattr(getattr(client, op.namespace, None), op.name, None)
            if not callable(method):
                missing.append(f"{type(client).__name__}.{op.namespace}.{op.name} ({op.id})")
            elif client is asynchronous and op.kind != "stream" and op.page_key is None:
                assert inspect.iscoroutinefunction(method), op.id
    assert not missing


def test_generated_files_are_current() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "sdk-python" / "scripts" / "generate.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_names_are_the_typescript_sdks() -> None:
    """names.json is sdk/src/names.ts snake_cased: the same namespaces and methods in both SDKs."""
    ts = ROOT / "sdk" / "src" / "names.ts"
    names = json.loads((ROOT / "sdk-python" / "names.json").read_text("utf-8"))
    for op in OPERATIONS.values():
        assert [op.namespace, op.name] == names[op.id][:2], op.id
    if ts.exists():
        text = ts.read_text("utf-8")
        for op_id, entry in names.items():
            assert f"'{op_id}':" in text, f"{op_id} is not in sdk/src/names.ts"
