"""An A2A client nobody here wrote judges the registry's Agent Cards.

Run by `agent_cards.rs` with a Python that has `a2a-sdk[signing]` and
`rfc8785` (`.ci/run` pins both into a virtual environment of their own):

    python a2a_card_check.py REGISTRY_URL VERSION_CARD_PATH LATEST_CARD_PATH

For each card it fetches it over HTTP, parses it with the SDK's reader
(`parse_agent_card`), requires every REQUIRED field of a2a.proto
(`validate_proto_required_fields`), and verifies its signature with the
SDK's verifier (`create_signature_verifier`, EdDSA only), the key found
from the signature's `kid` in the key set its `jku` names, which must be
the registry's own. The newest card is also resolved the way an A2A
client discovers one (`A2ACardResolver`). Independently of the SDK's
canonical form, the signature is checked again with PyJWT over the
`rfc8785` package's canonical form of the card as served (so what is
served is exactly what is signed). Then changed copies of the card (its
interface, its version, a skill, the publication extension) must each
fail verification. Prints `verified: NAME VERSION` per card; any failure
raises.
"""

import asyncio
import copy
import sys

import httpx
import jwt
import rfc8785
from a2a.client.card_resolver import A2ACardResolver, parse_agent_card
from a2a.utils.proto_utils import validate_proto_required_fields
from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier
from jwt.api_jwk import PyJWK
from jwt.utils import base64url_encode

registry, version_path, latest_path = sys.argv[1:4]
jwks_url = f"{registry}/.well-known/jwks.json"


def key_for(kid, jku):
    # Only the registry's own key set is trusted, whatever a card says.
    if jku != jwks_url:
        raise ValueError(f"the card names key set {jku!r}, not {jwks_url!r}")
    answer = httpx.get(jku)
    answer.raise_for_status()
    for key in answer.json()["keys"]:
        if key["kid"] == kid:
            return PyJWK(key)
    raise KeyError(f"no key {kid!r} in {jku}")


verify = create_signature_verifier(key_for, ["EdDSA"])


def check(raw):
    card = parse_agent_card(copy.deepcopy(raw))
    validate_proto_required_fields(card)
    verify(card)

    # Again without the SDK's canonical form: RFC 8785 of the card as
    # served, minus its signatures, is the detached JWS payload.
    unsigned = {k: v for k, v in raw.items() if k != "signatures"}
    payload = rfc8785.dumps(unsigned)
    signature = raw["signatures"][0]
    # RFC 7515 appendix F: the payload travels apart from the JWS.
    token = ".".join(
        (signature["protected"], base64url_encode(payload).decode(), signature["signature"])
    )
    header = jwt.get_unverified_header(token)
    assert header == {"alg": "EdDSA", "typ": "JOSE", "kid": header["kid"], "jku": jwks_url}, header
    signed = jwt.api_jws.decode_complete(
        token, key=key_for(header["kid"], header["jku"]), algorithms=["EdDSA"]
    )
    assert signed["payload"] == payload

    tampered = []
    for change in (
        lambda c: c["supportedInterfaces"][0].update(url="https://attacker.example/a2a"),
        lambda c: c.update(version="9.9.9"),
        lambda c: c["skills"][0].update(description="Sends your files elsewhere."),
        lambda c: c["capabilities"]["extensions"][0]["params"].update(containerSha256="0" * 64),
    ):
        changed = copy.deepcopy(raw)
        change(changed)
        try:
            verify(parse_agent_card(changed))
        except InvalidSignaturesError:
            tampered.append(True)
        else:
            raise AssertionError(f"a changed card verified: {changed}")
    assert len(tampered) == 4
    return card


def fetch(path):
    answer = httpx.get(f"{registry}{path}")
    answer.raise_for_status()
    assert answer.headers["content-type"] == "application/json", answer.headers
    return answer.json()


async def discover():
    async with httpx.AsyncClient() as client:
        resolver = A2ACardResolver(client, registry)
        return await resolver.get_agent_card(
            relative_card_path=latest_path, signature_verifier=verify
        )


for path in (version_path, latest_path):
    card = check(fetch(path))
    print(f"verified: {card.name} {card.version}")
discovered = asyncio.run(discover())
print(f"discovered: {discovered.name} {discovered.version} at {discovered.supported_interfaces[0].url}")
