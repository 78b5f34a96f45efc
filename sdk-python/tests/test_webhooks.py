"""webhooks.unwrap: a delivery signed by the server, and by the standardwebhooks npm package."""
from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Dict, Iterator, Tuple

import pytest

import engram
from conftest import ROOT

Delivery = Tuple[bytes, Dict[str, str]]


@pytest.fixture()
def receiver() -> Iterator[Tuple[str, "queue.Queue[Delivery]"]]:
    deliveries: "queue.Queue[Delivery]" = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            deliveries.put((body, {k.lower(): v for k, v in self.headers.items()}))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", deliveries
    server.shutdown()


def test_unwrap_a_delivery_from_the_server(client: engram.Engram, receiver: Tuple[str, "queue.Queue[Delivery]"]) -> None:
    url, deliveries = receiver
    hook = client.webhooks.create(url=url, events=["memory.created"])
    client.webhooks.test(hook["webhook_id"])
    body, headers = deliveries.get(timeout=120)
    event = engram.webhooks.unwrap(body, headers, hook["secret"])
    assert event["type"] == "webhook.test"
    assert event["data"]["webhook_id"] == hook["webhook_id"]
    with pytest.raises(engram.WebhookVerificationError):
        engram.webhooks.unwrap(body.replace(b"webhook.test", b"webhook.tezt"), headers, hook["secret"])
    with pytest.raises(engram.WebhookVerificationError):
        engram.webhooks.unwrap(body, headers, hook["secret"], now=time.time() + 600)
    with pytest.raises(engram.WebhookVerificationError):
        engram.webhooks.unwrap(body, headers, "whsec_" + "A" * 32)


def test_unwrap_a_delivery_signed_by_standardwebhooks() -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    payload = json.dumps({"id": "evt_1", "type": "memory.created", "created_at": "2026-01-01T00:00:00Z", "tenant_id": "t", "data": {}})
    now = int(time.time())
    script = (
        "const {Webhook}=require('standardwebhooks');"
        f"process.stdout.write(new Webhook({json.dumps(secret[6:])}).sign('msg_1', new Date({now}*1000), {json.dumps(payload)}))"
    )
    signature = subprocess.run(["node", "-e", script], capture_output=True, cwd=ROOT, check=True).stdout.decode()
    headers = {"Webhook-Id": "msg_1", "Webhook-Timestamp": str(now), "Webhook-Signature": f"v1,AAAA {signature}"}
    assert engram.webhooks.unwrap(payload, headers, secret)["type"] == "memory.created"
    assert engram.webhooks.verify(payload.encode(), headers, secret)
    assert not engram.webhooks.verify(payload + " ", headers, secret)
