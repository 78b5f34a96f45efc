"""A live engram (embedded PGlite) for the tests: `node --import tsx functions/node.ts` on a free port."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator, NamedTuple

import httpx
import pytest

import engram

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "python-sdk-admin-token-" + uuid.uuid4().hex


class Server(NamedTuple):
    base_url: str
    admin_token: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """ENGRAM_TEST_BASE_URL + ENGRAM_TEST_ADMIN_TOKEN point at a running server; otherwise one is started."""
    if os.environ.get("ENGRAM_TEST_BASE_URL"):
        yield Server(os.environ["ENGRAM_TEST_BASE_URL"], os.environ["ENGRAM_TEST_ADMIN_TOKEN"])
        return
    data_dir = tempfile.mkdtemp(prefix="engram-py-")
    port = _free_port()
    env = {
        **os.environ,
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "DATA_DIR": data_dir,
        "ADMIN_TOKEN": ADMIN_TOKEN,
        "EMBEDDING_PROVIDER": "hash",
        "WEBHOOKS_ALLOW_INSECURE": "true",
        "LOG_LEVEL": "warn",
    }
    log = open(Path(data_dir) / "server.log", "wb")
    proc = subprocess.Popen(["node", "--import", "tsx", "functions/node.ts"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited {proc.returncode}: {(Path(data_dir) / 'server.log').read_text()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start: " + (Path(data_dir) / "server.log").read_text())
            time.sleep(0.3)
        yield Server(base, ADMIN_TOKEN)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(data_dir, ignore_errors=True)


def new_tenant(server: Server) -> str:
    """A fresh enterprise tenant's API key, made through the SDK's own admin namespace."""
    admin = engram.Engram(api_key=server.admin_token, base_url=server.base_url)
    created = admin.admin.create_tenant(email=f"py-{uuid.uuid4().hex[:10]}@example.com", tier="enterprise")
    admin.close()
    return created["api_key"]


@pytest.fixture()
def api_key(server: Server) -> str:
    return new_tenant(server)


@pytest.fixture()
def client(server: Server, api_key: str) -> Iterator[engram.Engram]:
    with engram.Engram(api_key=api_key, base_url=server.base_url) as c:
        yield c
