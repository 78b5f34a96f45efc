"""The contract scenario (tests/contract_scenario.py) through the Python SDK against the live server.

ENGRAM_CONTRACT_OUT=<file> writes the transcript, for the comparison with the TypeScript SDK's."""
from __future__ import annotations

import json
import os

import engram
from contract_scenario import run


def test_contract_scenario(client: engram.Engram) -> None:
    transcript = run(client)
    if os.environ.get("ENGRAM_CONTRACT_OUT"):
        with open(os.environ["ENGRAM_CONTRACT_OUT"], "w", encoding="utf-8") as f:
            json.dump(transcript, f, indent=2, sort_keys=True, ensure_ascii=False)
    assert transcript["batch"] == {"stored": 5, "failed": 0}
    assert set(transcript["search"]) == {"semantic", "keyword", "hybrid"}
    assert transcript["search"]["keyword"]["top"] == ["The customer prefers invoices in EUR"]
    assert transcript["pages"] == [4, 2]
    assert transcript["conflict"] == {"status": 409, "code": "CONFLICT"}
    assert transcript["update"] == {"importance": 9, "tags": ["billing", "eu"]}
    assert transcript["rollback"]["success"] is True
    assert transcript["audit_verify"]["valid"] is True
    assert transcript["held"] == {"status": "pending_review"}
    assert transcript["decided"] == {"status": "approved", "decision": "approve"}
    assert transcript["trace"]["valid"] is True, transcript["trace"]["problems"]
    assert transcript["erasure"]["valid"] is True
    assert transcript["webhook"] == {"type": "webhook.test", "webhook_id_matches": True}
