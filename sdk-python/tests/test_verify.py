"""Offline verification: a real trace certificate and erasure receipt from the server, then tampered."""
from __future__ import annotations

import base64
import copy
import json
import subprocess
from typing import Any, Dict

import engram
from conftest import ROOT
from engram._jcs import JCSError, canonicalize

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def b64url(number: int) -> str:
    return base64.urlsafe_b64encode(number.to_bytes((number.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()


def test_trace_certificate_verifies_offline_and_tampering_is_caught(client: engram.Engram) -> None:
    trace = client.traces.start(agent_id="py-agent", description="python sdk")
    trace_id = trace["trace_id"]
    client.traces.add_step(trace_id, type="THOUGHT", content="look up the order", metadata={"n": 1.5, "ü": "ok"})
    client.traces.add_step(trace_id, type="ACTION", content="refund €10 😀")
    client.traces.complete(trace_id)
    cert = client.traces.certificate(trace_id)
    key = client.traces.public_key()

    check = engram.verify_trace_certificate(cert, key["public_key"])
    assert check.valid, check.problems
    assert check.version == 2 and check.key_valid and check.chain_valid and check.signature_valid and check.certificate_signature_valid

    loaded = serialization.load_pem_public_key(key["public_key"].encode())
    assert isinstance(loaded, rsa.RSAPublicKey)
    numbers = loaded.public_numbers()
    jwk = {"kty": "RSA", "n": b64url(numbers.n), "e": b64url(numbers.e)}
    assert engram.verify_trace_certificate(cert, jwk).valid
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key()
    other_pem = other.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    wrong = engram.verify_trace_certificate(cert, other_pem)
    assert not wrong.valid and "signed by another key than the one expected" in wrong.problems

    with_content = client.traces.certificate(trace_id, include_content="true")
    full = engram.verify_trace_certificate(with_content)
    assert full.valid and full.content_valid is True, full.problems

    changed: Dict[str, Any] = copy.deepcopy(dict(with_content))
    changed["steps"][1]["content"] = "refund €1000"
    result = engram.verify_trace_certificate(changed)
    assert not result.valid and result.content_valid is False

    renamed: Dict[str, Any] = copy.deepcopy(dict(cert))
    renamed["agent_id"] = "someone-else"
    result = engram.verify_trace_certificate(renamed)
    assert not result.valid and not result.certificate_signature_valid

    chain: Dict[str, Any] = copy.deepcopy(dict(cert))
    chain["steps"][0]["integrity_hash"] = "0" * 64
    assert not engram.verify_trace_certificate(chain).chain_valid

    assert not engram.verify_trace_certificate({"trace_id": 1}).valid
    assert engram.verify_trace_certificate("not json").problems[0].startswith("not a trace certificate")


def test_erasure_receipt_verifies_offline(client: engram.Engram) -> None:
    memory = client.memories.store(observation="forget me")
    receipt = client.erasures.create(reason="user asked", memory_ids=[memory["uuid"]])
    key = client.traces.public_key()["public_key"]
    check = engram.verify_erasure_receipt(receipt, key)
    assert check.valid, check.problems
    tampered: Dict[str, Any] = {**receipt, "reason": "no reason"}
    assert not engram.verify_erasure_receipt(tampered, key).valid


def node_canonicalize(value: Any) -> str:
    """The `canonicalize` npm package (the TS SDK's JCS), for a cross-check."""
    script = "import('canonicalize').then(m=>{let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(m.default(JSON.parse(s))))})"
    out = subprocess.run(["node", "-e", script], input=json.dumps(value).encode(), capture_output=True, cwd=ROOT, check=True)
    return out.stdout.decode("utf-8")


def test_jcs_numbers_as_rfc_8785_lists_them() -> None:
    vectors = {
        0.0: "0", -0.0: "0", 5e-324: "5e-324", 1.7976931348623157e308: "1.7976931348623157e+308",
        9007199254740992.0: "9007199254740992", 1e21: "1e+21", 999999999999999900000.0: "999999999999999900000",
        0.000001: "0.000001", 9.999999999999997e-7: "9.999999999999997e-7", 333333333.3333333: "333333333.3333333",
        -1.5: "-1.5", 100.0: "100", 1e-7: "1e-7", 123e20: "1.23e+22",
    }
    for number, text in vectors.items():
        assert canonicalize(number) == text, number
    with pytest.raises(JCSError):
        canonicalize(float("nan"))
    with pytest.raises(JCSError):
        canonicalize("\ud800")


def test_jcs_sorts_keys_by_utf16_code_units_and_matches_the_ts_sdk() -> None:
    keys = {"\u20ac": "Euro", "\r": "CR", "\ufb33": "Hebrew", "1": "One", "\U0001F600": "Emoji", "\u0080": "Control", "\u00f6": "o"}
    assert list(json.loads(canonicalize(keys))) == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\ufb33"]
    sample = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001, -7, 2**60, 0.1 + 0.2],
        "string": "\u20ac$\u000f\nA'B\"\\\\\"/\u2028\u007f\U0001F600",
        "literals": [None, True, False],
        "nested": {"b": [], "a": {"z": 1, "y": {}}, "\u00e9": 1},
    }
    assert canonicalize(sample) == node_canonicalize(sample)
