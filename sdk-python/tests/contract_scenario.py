"""The scripted scenario of the contract test (issue 47 item 4), run through the Python SDK.

It answers a transcript of what the server said, without ids or times, so the same scenario run
through the TypeScript SDK against the same server can be compared with it. Run it alone:
`python tests/contract_scenario.py --base-url http://127.0.0.1:8787 --api-key eng_...` prints the
transcript as JSON (the key must be of a fresh enterprise tenant).
"""
from __future__ import annotations

import argparse
import json
import queue
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, HTTPServer
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Literal, Tuple

import engram

Delivery = Tuple[bytes, Dict[str, str]]


@contextmanager
def receiver() -> Iterator[Tuple[str, "queue.Queue[Delivery]"]]:
    """A local webhook endpoint that queues each delivery (raw body, headers)."""
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", deliveries
    finally:
        server.shutdown()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def run(client: engram.Engram) -> Dict[str, Any]:
    out: Dict[str, Any] = {}

    stored = client.memories.store(observation="The customer prefers invoices in EUR", tags=["billing"], importance=7)
    out["store"] = sorted(stored)
    batch = client.memories.store_many(memories=[{"observation": f"Order {i} shipped to Lyon"} for i in range(5)])
    out["batch"] = {"stored": batch["stored"], "failed": batch["failed"]}

    out["search"] = {}
    modes: Tuple[Literal["semantic", "keyword", "hybrid"], ...] = ("semantic", "keyword", "hybrid")
    for mode in modes:
        found = client.memories.search(q="invoices EUR", mode=mode, limit=3)
        out["search"][mode] = {"mode": found["mode"], "top": [m["observation"] for m in found["memories"][:1]]}

    out["pages"] = [len(p["memories"]) for p in client.memories.list(limit=4).pages()]

    try:
        client.memories.store(observation="The customer prefers invoices in EUR", tags=["billing"], on_conflict="reject")
        out["conflict"] = None
    except engram.ConflictError as err:
        out["conflict"] = {"status": err.status, "code": err.code}
    updated = client.memories.update(stored["uuid"], importance=9, tags=["billing", "eu"])
    out["update"] = {"importance": updated["memory"]["importance"], "tags": updated["memory"]["tags"]}

    time.sleep(1.1)
    middle = _now()
    time.sleep(1.1)
    client.memories.store(observation="A memory the rollback removes")
    preview = client.rollback.preview(target=middle)
    out["rollback_preview"] = {
        "artifacts_deleted": preview["artifacts_deleted"],
        "artifacts_restored": preview["artifacts_restored"],
        "memories_reverted": preview["memories_reverted"],
        "safe_rollback": preview["safe_rollback"],
    }
    rolled = client.rollback.run(target=middle)
    out["rollback"] = {"success": rolled["success"], "operations_undone": rolled["operations_undone"], "memories_reverted": rolled["memories_reverted"]}

    audit = client.audit.verify()
    out["audit_verify"] = {"valid": audit["valid"], "failure_count": audit["failure_count"]}

    agent_key = client.keys.create_restricted(name="contract-agent", scopes=["actions:write"])
    with engram.Engram(api_key=agent_key["api_key"], base_url=client.base_url) as agent:
        held = agent.actions.submit(action="http.post", params={"url": "https://bank.example/wire", "amount": 250000, "memo": "wire transfer"})
    out["held"] = {"status": held["status"]}
    decided = None
    for _ in range(30):
        try:
            decided = client.approvals.decide(held["action_id"], decision="approve", reason="verified by phone", confirmation="ROLLBACK")
            break
        except engram.ConflictError as err:
            # Solo mode: a decision waits 5 s after the submission (409 with retry_after).
            wait = err.body.get("retry_after", 1) if isinstance(err.body, dict) else 1
            time.sleep(min(float(wait), 6.0))
    out["decided"] = None if decided is None else {"status": decided["status"], "decision": decided["decision"]}

    trace = client.traces.start(agent_id="contract-agent", description="contract scenario")
    client.traces.add_step(trace["trace_id"], type="THOUGHT", content="check the invoice currency")
    client.traces.add_step(trace["trace_id"], type="OUTPUT", content="EUR")
    client.traces.complete(trace["trace_id"])
    public_key = client.traces.public_key()["public_key"]
    check = engram.verify_trace_certificate(client.traces.certificate(trace["trace_id"], include_content="true"), public_key)
    out["trace"] = {"valid": check.valid, "version": check.version, "content_valid": check.content_valid, "problems": check.problems}

    receipt = client.erasures.create(reason="customer request", memory_ids=[stored["uuid"]])
    out["erasure"] = {"memories": receipt["counts"].get("memories"), "valid": engram.verify_erasure_receipt(receipt, public_key).valid}

    with receiver() as (url, deliveries):
        hook = client.webhooks.create(url=url, events=["memory.created"])
        client.webhooks.test(hook["webhook_id"])
        body, headers = deliveries.get(timeout=120)
        event = engram.webhooks.unwrap(body, headers, hook["secret"])
        out["webhook"] = {"type": event["type"], "webhook_id_matches": event["data"].get("webhook_id") == hook["webhook_id"]}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key", required=True)
    args = parser.parse_args()
    with engram.Engram(api_key=args.api_key, base_url=args.base_url) as client:
        print(json.dumps(run(client), indent=2, sort_keys=True, ensure_ascii=False))


if __name__ == "__main__":
    main()
