"""Offline checks: a trace certificate (docs/change-control.md#the-hashes) and an erasure receipt
(docs/security.md#erasure), as sdk/src/verify.ts does them, on `cryptography`."""
from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from ._jcs import JCSError, canonicalize

#: The version this verifier checks whole; version 1 (traces started before it) signs the root only.
CERTIFICATE_VERSION = 2
ALGORITHM = "RSA-PSS-SHA256"
#: A step's fields that `include_content=true` adds: covered by its integrity hash, not by certificate_signature.
CONTENT_FIELDS = ("content", "metadata", "created_at")
SALT_LENGTH = 32

PublicKey = Union[str, bytes, Mapping[str, Any]]
"""An SPKI PEM ("PUBLIC KEY" block, as GET /v1/traces/public-key gives it) or an RSA JWK ({kty, n, e})."""


@dataclass
class CertificateCheck:
    valid: bool = False
    version: Optional[int] = None
    key_valid: bool = False
    chain_valid: bool = False
    signature_valid: bool = False
    certificate_signature_valid: bool = False
    content_valid: Optional[bool] = None
    problems: List[str] = field(default_factory=list)


@dataclass
class ReceiptCheck:
    valid: bool = False
    problems: List[str] = field(default_factory=list)


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _b64url(text: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")


def _spki_der(key: PublicKey) -> bytes:
    """The SPKI DER of a PEM or a JWK: what `key_id` hashes."""
    if isinstance(key, Mapping):
        if key.get("kty") != "RSA" or not isinstance(key.get("n"), str) or not isinstance(key.get("e"), str):
            raise ValueError("expected an RSA JWK with n and e")
        public = rsa.RSAPublicNumbers(_b64url(key["e"]), _b64url(key["n"])).public_key()
        return public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    text = key.decode("ascii") if isinstance(key, bytes) else key
    match = re.search(r"-----BEGIN PUBLIC KEY-----([A-Za-z0-9+/=\s]+)-----END PUBLIC KEY-----", text.replace("\\n", "\n"))
    if not match:
        raise ValueError('expected an SPKI PEM "PUBLIC KEY" block')
    return base64.b64decode(re.sub(r"\s+", "", match.group(1)))


def _load(der: bytes) -> rsa.RSAPublicKey:
    key = serialization.load_der_public_key(der)
    if not isinstance(key, rsa.RSAPublicKey):
        raise ValueError("not an RSA key")
    return key


def _jcs(value: object) -> Optional[bytes]:
    try:
        return canonicalize(value).encode("utf-8")
    except JCSError:
        return None


def _verify_pss(key: rsa.RSAPublicKey, signature: object, data: Optional[bytes]) -> bool:
    if not isinstance(signature, str) or data is None:
        return False
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    # A signature is exactly as long as the modulus: one with bytes appended is refused here.
    if len(raw) * 8 != key.key_size:
        return False
    try:
        key.verify(raw, data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=SALT_LENGTH), hashes.SHA256())
        return True
    except InvalidSignature:
        return False


def _not_a_certificate(value: object) -> Optional[str]:
    if not isinstance(value, dict):
        return "not a JSON object"
    for name in ("trace_id", "integrity_root_hash", "signature", "signature_algorithm", "key_id", "public_key"):
        if not isinstance(value.get(name), str):
            return f"{name} is missing or not a string"
    if not isinstance(value.get("step_count"), (int, float)) or isinstance(value.get("step_count"), bool):
        return "step_count is missing or not a number"
    if not isinstance(value.get("steps"), list):
        return "steps is missing or not an array"
    for i, step in enumerate(value["steps"]):
        if not isinstance(step, dict) or not isinstance(step.get("integrity_hash"), str) or not isinstance(step.get("chain_hash"), str):
            return f"steps[{i}] has no integrity_hash and chain_hash"
    return None


def _signed_bytes(cert: Dict[str, Any]) -> Optional[bytes]:
    """What certificate_signature covers: the certificate without it and without the steps' contents."""
    rest = {k: v for k, v in cert.items() if k != "certificate_signature"}
    rest["steps"] = [{k: v for k, v in step.items() if k not in CONTENT_FIELDS} for step in cert["steps"]]
    return _jcs(rest)


def _step_hash(trace_id: object, step: Dict[str, Any], version: int) -> Optional[str]:
    names = ["step_index", "type", "content", "metadata"] + (["created_at"] if version >= 2 else [])
    # A field the step lacks is left out, as JSON.stringify leaves out an undefined one.
    fields = {"trace_id": trace_id, **{n: step[n] for n in names if n in step}}
    data = _jcs(fields)
    return None if data is None else _sha256_hex(data)


def _text(value: object) -> str:
    """String(value) as JavaScript writes it, for messages and the chain."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def verify_trace_certificate(certificate: object, public_key: Optional[PublicKey] = None) -> CertificateCheck:
    """Verifies a certificate of GET /v1/traces/{trace_id}/certificate without the server.

    `key_id` is the SHA-256 hex of the key's SPKI DER; each chain hash the SHA-256 hex of the
    previous chain hash (empty before the first) + the step's integrity hash, the last one the
    root; `signature` RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) over the hex of
    `integrity_root_hash`; `certificate_signature` the same over the RFC 8785 bytes of the
    certificate without itself and without the steps' content, metadata and created_at. Pass
    `public_key` (kept from a source you trust) to refuse a certificate signed by another key;
    without it the certificate's own key proves integrity but not who signed. Never raises.
    """
    check = CertificateCheck()
    problems = check.problems
    shape = _not_a_certificate(certificate)
    if shape:
        problems.append(f"not a trace certificate: {shape}")
        return check
    assert isinstance(certificate, dict)
    cert: Dict[str, Any] = certificate
    raw_version = cert.get("certificate_version")
    version = raw_version if isinstance(raw_version, int) and not isinstance(raw_version, bool) else None
    check.version = version
    if version == 1:
        problems.append(
            "certificate_version 1: only integrity_root_hash is signed (the trace was started before certificates "
            "were signed whole); POST /v1/traces/{trace_id}/verify checks it on the server"
        )
    elif version != CERTIFICATE_VERSION:
        problems.append(f"unknown certificate_version {_text(raw_version)}")

    steps: List[Dict[str, Any]] = cert["steps"]
    check.chain_valid = len(steps) == cert["step_count"]
    if not check.chain_valid:
        problems.append(f"{len(steps)} steps listed, {_text(cert['step_count'])} sealed")
    chain = _sha256_hex(b"")
    previous = ""
    for i, step in enumerate(steps):
        if step.get("step_index") != i or isinstance(step.get("step_index"), bool):
            check.chain_valid = False
            problems.append(f"step {i} has index {_text(step.get('step_index'))}")
        chain = _sha256_hex((previous + step["integrity_hash"]).encode("utf-8"))
        if chain != step["chain_hash"]:
            check.chain_valid = False
            problems.append(f"step {i}: chain_hash is not SHA-256(previous chain hash + integrity_hash)")
        previous = step["chain_hash"]
        if any(name in step for name in CONTENT_FIELDS):
            matches = _step_hash(cert["trace_id"], step, version if version is not None else CERTIFICATE_VERSION) == step["integrity_hash"]
            check.content_valid = (True if check.content_valid is None else check.content_valid) and matches
            if not matches:
                problems.append(f"step {i}: its type, content, metadata or created_at do not hash to its integrity_hash")
    if (previous if steps else chain) != cert["integrity_root_hash"]:
        check.chain_valid = False
        problems.append("the last chain hash is not integrity_root_hash")

    try:
        der = _spki_der(cert["public_key"])
        check.key_valid = _sha256_hex(der) == cert["key_id"]
        if not check.key_valid:
            problems.append("public_key does not hash to key_id")
        if public_key is not None and _sha256_hex(_spki_der(public_key)) != cert["key_id"]:
            check.key_valid = False
            problems.append("signed by another key than the one expected")
        if cert["signature_algorithm"] != ALGORITHM:
            problems.append(f"unknown signature_algorithm {cert['signature_algorithm']}")
        else:
            key = _load(der)
            check.signature_valid = _verify_pss(key, cert["signature"], cert["integrity_root_hash"].encode("utf-8"))
            if not check.signature_valid:
                problems.append("the signature does not verify over integrity_root_hash")
            if version != 1:
                check.certificate_signature_valid = _verify_pss(key, cert.get("certificate_signature"), _signed_bytes(cert))
                if not check.certificate_signature_valid:
                    problems.append("certificate_signature does not verify over the certificate: a field was changed, added or removed")
    except (ValueError, TypeError, binascii.Error) as err:
        problems.append(f"unreadable key: {err}")
    check.valid = (
        not problems
        and check.key_valid
        and check.chain_valid
        and check.signature_valid
        and check.certificate_signature_valid
        and check.content_valid is not False
    )
    return check


def verify_erasure_receipt(receipt: object, public_key: PublicKey) -> ReceiptCheck:
    """Verifies an erasure receipt (erasures.create, erasures.get, erasures.account) without the server.

    `signature` is RSA-PSS (SHA-256, MGF1-SHA-256, salt 32) over the RFC 8785 bytes of the receipt
    without `signature`; `public_key` (GET /v1/traces/public-key, kept from a source you trust)
    must hash to its `key_id`. Never raises.
    """
    if (
        not isinstance(receipt, dict)
        or not isinstance(receipt.get("erasure_id"), str)
        or not isinstance(receipt.get("signature"), str)
        or not isinstance(receipt.get("key_id"), str)
    ):
        return ReceiptCheck(False, ["not an erasure receipt: erasure_id, signature or key_id is missing"])
    problems: List[str] = []
    signed = {k: v for k, v in receipt.items() if k != "signature"}
    valid = False
    try:
        der = _spki_der(public_key)
        if _sha256_hex(der) != receipt["key_id"]:
            problems.append("signed by another key than the one given: key_id does not match it")
        elif receipt.get("signature_algorithm") != ALGORITHM:
            problems.append(f"unknown signature_algorithm {_text(receipt.get('signature_algorithm'))}")
        else:
            valid = _verify_pss(_load(der), receipt["signature"], _jcs(signed))
            if not valid:
                problems.append("the signature does not verify over the receipt: a field was changed, added or removed")
    except (ValueError, TypeError, binascii.Error) as err:
        problems.append(f"unreadable key: {err}")
    return ReceiptCheck(valid and not problems, problems)
